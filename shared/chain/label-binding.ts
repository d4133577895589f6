import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import type { LedgerEvent } from '../domain/event.js';
import { DELTA_EVENT } from '../domain/state.js';
import type { Reader } from './reader.js';
import { eventsIn } from './state-binding.js';
import { TamperedObjectError } from './tampered.js';

/**
 * Checkpoint list entries (`ckpt#`) and label records (`label#`) are bound through the delta
 * that commits them (docs/ledger-format.md, "Binding rule"): the delta's payload carries the
 * label, meta, parentLabel and baseSeq the records repeat, so a read checks every entry it
 * serves against the verified event at the entry's seq, and a list page also checks it is
 * complete: every labelled delta in the seq range the page covers has its entry there. A
 * mismatch is ErrTamperedLedger naming `checkpoint`.
 */

/** What a list entry or label record says about its checkpoint. */
export interface EntryClaim {
  label: string;
  seq: number;
  stateDigest?: string;
  meta?: JsonValue;
  parentLabel?: string;
  parentSeq?: number;
}

interface LabelledPayload {
  label?: unknown;
  stateDigest?: unknown;
  meta?: JsonValue;
  parentLabel?: unknown;
  baseSeq?: unknown;
}

export const badCheckpoint = (seq: number, why: string) =>
  new TamperedObjectError(
    'checkpoint',
    { firstBadSeq: Math.max(seq, 1), seq },
    `checkpoint at seq ${seq}: ${why}`,
  );

const labelOf = (event: LedgerEvent): string | undefined => {
  if (event.type !== DELTA_EVENT) return undefined;
  const label = (event.payload as LabelledPayload | null)?.label;
  return typeof label === 'string' ? label : undefined;
};

const same = (a: JsonValue | undefined, b: JsonValue | undefined) =>
  a === undefined || b === undefined ? a === b : canonicalJson(a) === canonicalJson(b);

/** Checks one entry against the verified event at its seq. */
export const checkEntry = (claim: EntryClaim, event: LedgerEvent | undefined): void => {
  if (event?.seq !== claim.seq || labelOf(event) !== claim.label) {
    throw badCheckpoint(claim.seq, `no delta labelled ${claim.label} is at its seq`);
  }
  const p = event.payload as LabelledPayload;
  const parentSeq = typeof p.baseSeq === 'number' ? p.baseSeq : undefined;
  const parentLabel = typeof p.parentLabel === 'string' ? p.parentLabel : undefined;
  if (
    (claim.stateDigest !== undefined && claim.stateDigest !== p.stateDigest) ||
    !same(claim.meta, p.meta) ||
    claim.parentLabel !== parentLabel ||
    (claim.parentSeq !== undefined && claim.parentSeq !== parentSeq)
  ) {
    throw badCheckpoint(claim.seq, 'its record is not what its delta committed');
  }
};

/** The entry of one checkpoint, checked against its delta (one event read). */
export const checkEntryAt = async (
  reader: Reader,
  tenant: string,
  stream: string,
  claim: EntryClaim,
): Promise<void> => {
  const [event] = await eventsIn(reader, tenant, stream, claim.seq, claim.seq);
  checkEntry(claim, event);
};

/**
 * A list page: every entry matches its delta, and the entries scanned are exactly the
 * labelled deltas of [from, to] (a deleted entry is noticed, so is an invented one).
 */
export const checkPage = async (
  reader: Reader,
  tenant: string,
  stream: string,
  range: { from: number; to: number },
  scanned: EntryClaim[],
): Promise<void> => {
  if (range.to < range.from) return;
  const events = await eventsIn(reader, tenant, stream, range.from, range.to);
  const bySeq = new Map(events.map((e) => [e.seq, e]));
  for (const claim of scanned) checkEntry(claim, bySeq.get(claim.seq));
  const listed = new Set(scanned.map((c) => c.seq));
  const missing = events.find((e) => labelOf(e) !== undefined && !listed.has(e.seq));
  if (missing) throw badCheckpoint(missing.seq, 'its list entry is missing');
};
