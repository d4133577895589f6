import { toHead } from '../chain/layout.js';
import { headKey } from '../chain/storage-keys.js';
import { DivergenceError, SeqConflictError } from '../domain/errors.js';
import { expiredEntries, expiryOps, hintOf } from '../domain/expiry-hint.js';
import { appliesOps } from '../domain/state.js';
import type { Checkpointer } from '../state/checkpoint.js';
import { type CompactDeps, type Visit, visitItem } from './compact-types.js';

/**
 * Expired entries of a stream's state, removed by the compactor (a delta's `expiry` hint,
 * domain/expiry-hint.ts; a LangGraph store's items past their TTL are one use). A visit:
 *
 *   1. Only a head that had a hint (`expiryDueAt`, set by the commit that scheduled this
 *      visit) is looked at. The hint is read from the event that set the head's state,
 *      through the verifying reader: a hint edited in storage fails the read closed, and a
 *      head whose last state-setting delta has none is left alone.
 *   2. A hint not due yet: the visit at its time is scheduled (idempotent) and nothing else.
 *   3. Due: the head's state is hydrated (verified against the chain) and the entries whose
 *      expiry field is at or before the compactor's clock are found there, at most `max`;
 *      the hint's `at` decides nothing here. None: the next visit is scheduled at the state's
 *      earliest expiry (a hint that was early).
 *   4. One checkpoint deletes them, on the digest of the state read (linear, no key), with
 *      the hint of the entries that stay, whose commit schedules the next visit. A client's
 *      write since the read wins: the checkpoint is refused (ErrDivergenceDetected) and the
 *      visit is scheduled for the next pass (as when more than `max` expired), which reads the new state (a refreshed entry
 *      is then not expired).
 * Dies after 3: nothing was written, the work item stays, the next pass does it again. Dies
 * after 4: the entries are gone and the next visit was scheduled by the commit; the work
 * item left behind visits once more and finds nothing to delete.
 */

export interface ExpiryDeps extends CompactDeps {
  checkpoints: Checkpointer;
}

/** Deletes the expired entries of the visit's stream; the number deleted. */
export const expireEntries = async (
  deps: ExpiryDeps,
  visit: Visit,
  max: number,
): Promise<number> => {
  const { records, clock, states, checkpoints, crash } = deps;
  const { tenant, stream, head } = visit;
  if (head.expiryDueAt === undefined || head.stateSeq === 0) return 0;
  if (head.prunedSeq !== undefined && head.stateSeq <= head.prunedSeq) return 0; // its event is gone
  // The ledger's reader (with its keyring: a sealed stream's payloads are read too).
  const [event] = await states.reader.readSpan(tenant, stream, head.stateSeq, head.stateSeq);
  const hint = event && appliesOps(event.type) ? hintOf(event.payload) : undefined;
  if (!hint) return 0;
  const now = clock.now();
  if (hint.at > now) {
    await records.put(visitItem(visit, hint.at));
    return 0;
  }
  const hydrated = await states.hydrate(tenant, stream, head.seq);
  const found = expiredEntries(hydrated.state, hint, now, max);
  crash?.('expiry-read');
  if (found.keys.length === 0) {
    if (found.next !== undefined) await records.put(visitItem(visit, found.next));
    return 0;
  }
  try {
    await checkpoints.checkpoint({
      tenant,
      stream,
      ops: expiryOps(hint.path, found.keys),
      baseDigest: hydrated.stateDigest,
      ...(found.next === undefined
        ? {}
        : { expiry: { at: found.next, path: hint.path, field: hint.field } }),
    });
  } catch (err) {
    if (!(err instanceof DivergenceError || err instanceof SeqConflictError)) throw err;
    await records.put(visitItem(visit, clock.now() + 1));
    return 0;
  }
  // More expired than one visit deletes: the next pass goes on. After now, so the key is not
  // the work item this visit removes when it ends (the commit's own may be).
  if (found.next !== undefined && found.next <= now) await records.put(visitItem(visit, now + 1));
  crash?.('expiry-committed');
  const moved = await records.get(headKey(tenant, stream));
  if (moved) visit.head = toHead(moved);
  return found.keys.length;
};
