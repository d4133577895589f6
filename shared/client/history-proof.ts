import { type VerifyEventsOptions, verifyEvents } from '../domain/verify.js';
import { ClientVerificationError } from './errors.js';
import type { HistoryPage } from './history-types.js';
import { provenValue, stateMatches } from './state-proofs.js';
import type { Json, LedgerEvent, StateValue } from './types.js';

/**
 * A session history read with `proof` (GET …/history?proof=true), checked here against the
 * event the server says set the state (alone, that event is the server's word: only with
 * `verify` does HefestoClient link it to the chain, as the head's state-setting event of a
 * head proven in the signed tree head, client.ts #headState):
 *
 *   1. the event: its hash recomputed from its fields, at or below the head `seq`; a format 2
 *      event (sealed at rest, docs/privacy.md) from its header, its payload (which records
 *      the digest step 2 checks against) bound to the header's commitment with the stream's
 *      k_c when `binding.commitKey` is given; with `binding.headersOnly` the header alone is
 *      checked and the payload, so the items, are the server's word;
 *   2. the Merkle path of `/items` checked against the state digest that event records (a
 *      stream on digest v1: the whole state sent, its v1 digest the one that event records);
 *   3. the items answered: the last `limit` of that proven value, whatever else was sent;
 *   4. their schema version the one that event yields (a delta's `schema`, a migration's
 *      `to`; absent: 1), so a forged `schema` cannot make a session upcast current items.
 * A page with no items needs no proof; one with items and none, or any check that fails, is a
 * ClientVerificationError and nothing is returned.
 *
 * @example
 * ```ts
 * const { items, event } = provenHistory(body, 10);
 * ```
 */
export const provenHistory = (
  page: HistoryPage,
  limit: number | undefined,
  binding: VerifyEventsOptions = {},
): { items: Json[]; event?: LedgerEvent; schema?: number } => {
  const { proof } = page;
  if (!proof) {
    if (page.items.length > 0) {
      throw new ClientVerificationError(page.seq, 'the server sent the history without its proof');
    }
    return { items: [] };
  }
  const { event } = proof;
  if (event.seq > page.seq) {
    throw new ClientVerificationError(
      event.seq,
      `the state was set at ${event.seq}, past the head ${page.seq}`,
    );
  }
  const checked = verifyEvents(
    [event] as never,
    { seq: event.seq - 1, hash: event.prevHash },
    binding,
  );
  if (!checked.ok) throw new ClientVerificationError(checked.firstBadSeq, checked.reason);
  const value =
    'whole' in proof
      ? wholeItemsV1(proof.whole, event)
      : provenValue({ proof: proof.state } as unknown as StateValue, event, '/items');
  if (!Array.isArray(value)) {
    throw new ClientVerificationError(event.seq, 'the proven history is not a list of items');
  }
  const items = limit === undefined ? value : limit <= 0 ? [] : value.slice(-limit);
  const schema = yieldedSchema(event);
  if ((page.schema ?? 1) !== schema) {
    throw new ClientVerificationError(
      event.seq,
      `the server sent schema version ${page.schema ?? 1}; the event that set the state yields ${schema}`,
    );
  }
  return { items, event, ...(schema > 1 ? { schema } : {}) };
};

/** A v1 stream's items: the whole state sent must have the v1 digest the event records. */
const wholeItemsV1 = (whole: { [key: string]: Json }, event: LedgerEvent): Json | undefined => {
  const recorded = (event.payload as { stateDigest?: unknown } | null)?.stateDigest;
  if (typeof recorded !== 'string' || !stateMatches(whole, recorded, 1)) {
    throw new ClientVerificationError(event.seq, 'the state sent is not the one the event records');
  }
  return whole.items;
};

/** The schema version of the state an event yields: a migration's `to`, else its `schema`. */
const yieldedSchema = (event: LedgerEvent): number => {
  const payload = (event.payload ?? {}) as { to?: unknown; schema?: unknown };
  const version = event.type === 'hefesto.migration' ? payload.to : payload.schema;
  return typeof version === 'number' ? version : 1;
};
