import type { LedgerEvent } from '../domain/event.js';
import { pendingWritesDigest, WRITES_EVENT, type WritesBinding } from '../domain/pending-writes.js';
import { appliesOps, DELTA_EVENT } from '../domain/state.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { badCheckpoint } from './label-binding.js';
import type { HeadRecord } from './layout.js';
import type { Reader } from './reader.js';
import { eventsIn, setsState } from './state-binding.js';
import { ckptSk, streamPk } from './storage-keys.js';
import { TamperedObjectError } from './tampered.js';

/**
 * How a checkpoint's pending writes are bound to the chain (docs/ledger-format.md, "Pending
 * writes"; frozen-writes.ts): the event its label record's `writesSeq` names (the delta after
 * the one that moved the head's state off it, or a later `hefesto.writes` event) commits the
 * digest of all its writes (domain/pending-writes.ts). A read recomputes the digest of what it
 * serves; a label without `writesSeq` is unbound, which is right only for the tip (the
 * checkpoint the head's state is), the checkpoint the tip left (its delta's `leaves`), and
 * checkpoints written before the binding (their delta has no `writesBound`). Anything else is
 * ErrTamperedLedger naming `pending-writes` and the checkpoint's seq.
 */

interface BindingPayload {
  label?: unknown;
  digest?: unknown;
  writesBound?: unknown;
  leaves?: unknown;
  pendingWrites?: { label?: unknown; digest?: unknown } | null;
}

export const badWrites = (seq: number, label: string, why: string) =>
  new TamperedObjectError(
    'pending-writes',
    { firstBadSeq: Math.max(seq, 1), seq },
    `pending writes of checkpoint ${label} (seq ${seq}): ${why}`,
  );

/** The binding an event commits: a delta's `pendingWrites`, or a `hefesto.writes` event's. */
export const bindingOf = (event: { type: string; payload: unknown }): WritesBinding | undefined => {
  const p = event.payload as BindingPayload | null;
  const b = event.type === WRITES_EVENT ? p : appliesOps(event.type) ? p?.pendingWrites : null;
  return typeof b?.label === 'string' && typeof b.digest === 'string'
    ? { label: b.label, digest: b.digest }
    : undefined;
};

/** Whether a labelled delta's writes are to be bound (written since the binding exists). */
export const writesBoundOf = (event: { payload: unknown }): boolean =>
  (event.payload as BindingPayload | null)?.writesBound === true;

const labelOf = (event: LedgerEvent | undefined): string | undefined => {
  const label = (event?.payload as { label?: unknown } | null)?.label;
  return event?.type === DELTA_EVENT && typeof label === 'string' ? label : undefined;
};

/** The checkpoint a delta moved the head's state off (it froze its writes). */
export const leavesOf = (event: { type: string; payload: unknown }): string | undefined => {
  const leaves = (event.payload as BindingPayload | null)?.leaves;
  return appliesOps(event.type) && typeof leaves === 'string' ? leaves : undefined;
};

/**
 * The head's state as the binding needs it: its label, if it is a labelled checkpoint, and
 * the checkpoint it left. From its list entry (one get); a plain delta at the head's state has
 * none, so in a stream with labels its event is read.
 */
export const tipOf = async (
  records: RecordStore,
  reader: Reader,
  tenant: string,
  stream: string,
  head: Pick<HeadRecord, 'stateSeq' | 'labels' | 'prunedSeq'>,
): Promise<{ label?: string; leaves?: string }> => {
  if (!(head.stateSeq > (head.prunedSeq ?? 0)) || !(head.labels ?? 0)) return {};
  const entry = await records.get({ pk: streamPk(tenant, stream), sk: ckptSk(head.stateSeq) });
  if (typeof entry?.label === 'string') {
    return {
      label: entry.label,
      ...(typeof entry.leaves === 'string' ? { leaves: entry.leaves } : {}),
    };
  }
  const [event] = await eventsIn(reader, tenant, stream, head.stateSeq, head.stateSeq);
  const leaves = event && leavesOf(event);
  return leaves === undefined ? {} : { leaves };
};

/** What a read of one label's writes checks (see above). */
export interface WritesClaim {
  label: string;
  /** Its label record (`seq`, and `writesSeq` once bound). */
  record: Item;
  head: HeadRecord;
  /** The writes about to be served. */
  writes: Parameters<typeof pendingWritesDigest>[0];
  /** Verified events the caller read already (consecutive): used where they cover a read. */
  known?: LedgerEvent[];
}

/** The verified events [from, to]: from `known` when it holds them all, else read. */
const eventsOf = (
  reader: Reader,
  tenant: string,
  stream: string,
  known: LedgerEvent[] | undefined,
  from: number,
  to: number,
): Promise<LedgerEvent[]> => {
  const first = known?.[0];
  const last = known?.at(-1);
  if (known && first && last && first.seq <= from && last.seq >= to) {
    return Promise.resolve(known.filter((e) => e.seq >= from && e.seq <= to));
  }
  return eventsIn(reader, tenant, stream, from, to);
};

/**
 * Checks the writes a read serves. Costs one event read: the binding event; for the tip its
 * delta with the events after it up to the head; for the checkpoint the tip left the tip's
 * delta (with those after it); a checkpoint written before the binding, its own delta too.
 */
export const checkWrites = async (
  reader: Reader,
  tenant: string,
  stream: string,
  c: WritesClaim,
) => {
  const seq = Number(c.record.seq);
  const writesSeq = c.record.writesSeq;
  if (writesSeq !== undefined) {
    const at = Number(writesSeq);
    if (!Number.isSafeInteger(at) || at <= seq || at > c.head.seq) {
      throw badWrites(seq, c.label, `its label record names no binding event (${writesSeq})`);
    }
    const [event] = await eventsOf(reader, tenant, stream, c.known, at, at);
    const binding = event && bindingOf(event);
    if (binding?.label !== c.label) {
      throw badWrites(seq, c.label, `the event at seq ${at} does not bind them`);
    }
    if (pendingWritesDigest(c.writes) !== binding.digest) {
      throw badWrites(seq, c.label, `they are not the writes seq ${at} committed`);
    }
    return;
  }
  // Unbound: right for the tip, the checkpoint the tip left, and checkpoints written before.
  const { stateSeq } = c.head;
  const tip = stateSeq === seq;
  if (stateSeq > seq) {
    // The checkpoint the tip left: the delta at the head's state (no checkpoint after it up to
    // the head) names it; the next commit binds it.
    const after = await eventsOf(reader, tenant, stream, c.known, stateSeq, c.head.seq);
    const state = after[0];
    const last = state?.seq === stateSeq && !after.slice(1).some((e) => setsState(e.type));
    if (last && leavesOf(state) === c.label) return;
  }
  const own = await eventsOf(reader, tenant, stream, c.known, seq, tip ? c.head.seq : seq);
  const delta = own[0];
  if (delta?.seq !== seq || labelOf(delta) !== c.label) {
    throw badCheckpoint(seq, `no delta labelled ${c.label} is at its seq`);
  }
  if (!writesBoundOf(delta)) return; // written before the binding: served as stored
  if (!tip || own.slice(1).some((e) => setsState(e.type))) {
    throw badWrites(seq, c.label, 'the checkpoint was left but no event binds its writes');
  }
};
