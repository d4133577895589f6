import { verifyEvents } from '../domain/verify.js';
import { ClientVerificationError } from './errors.js';
import type { HistoryPage } from './history-types.js';
import { provenValue } from './state-proofs.js';
import type { Json, LedgerEvent, StateValue } from './types.js';

/**
 * A session history read with `proof` (GET …/history?proof=true), checked here against the
 * chain's own record of the state, not the server's word:
 *
 *   1. the event that set the state: its hash recomputed from its fields (the caller proves
 *      that hash in a signed tree head when it verifies receipts);
 *   2. the Merkle path of `/items` checked against the state digest that event records;
 *   3. the items answered: the last `limit` of that proven value, whatever else was sent.
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
): { items: Json[]; event?: LedgerEvent } => {
  const { proof } = page;
  if (!proof) {
    if (page.items.length > 0) {
      throw new ClientVerificationError(page.seq, 'the server sent the history without its proof');
    }
    return { items: [] };
  }
  const { event } = proof;
  const checked = verifyEvents([event] as never, { seq: event.seq - 1, hash: event.prevHash });
  if (!checked.ok) throw new ClientVerificationError(checked.firstBadSeq, checked.reason);
  const answer = { proof: proof.state } as unknown as StateValue;
  const value = provenValue(answer, event, '/items');
  if (!Array.isArray(value)) {
    throw new ClientVerificationError(event.seq, 'the proven history is not a list of items');
  }
  const items = limit === undefined ? value : limit <= 0 ? [] : value.slice(-limit);
  return { items, event };
};
