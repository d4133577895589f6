import { toHead, toSegmentIndex } from '../chain/layout.js';
import { headKey, segmentIndexKey } from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import type { RecordStore, TransactOp } from '../ports/record-store.js';
import type { StateStore } from './state.js';

/**
 * The cut a session history's clear makes (docs/openai-agents.md, "Clearing"): the chain's
 * pruning point moves to the clear's own delta C, so nothing before it is served any more
 * (state and fork at seq < C, events at seq <= C: ErrPruned, as after retention), the
 * compactor's pruning clean-up deletes the records and objects below it (compact-retention.ts
 * step 4), and verification starts from (C, hash at C), the clear's event kept in storage
 * because it binds the base at C.
 *
 *   1. Read the head: C is its `clearedSeq` (set by the clear's commit, commit-extras.ts);
 *      none, or already cut at or past C (another request, the compactor): done.
 *   2. The segment index record ending at C (a clear is an append of its own, so its segment
 *      ends there; a merge never runs before the cut: the compactor's visit cuts first).
 *      None: the cut is not possible here (left to the compactor's pruning horizon).
 *   3. Write the base snapshot at C (hydrated and verified; put-if-absent, so a second
 *      writer stores nothing twice). Dies after 3: an extra base; the retry, or the
 *      compactor's visit the clear's commit scheduled, starts again at 1.
 *   4. One transaction: head.prunedSeq = C, head.prunedHash = the hash at C, on condition the
 *      stream is not being deleted and its pruning point is still below C (a later cut, or
 *      the compactor's, wins), and the index record still ends at that hash.
 *   5. Release the stream's value references held before C (chunk-store.ts
 *      `releaseHeldBefore`): the chunks of items sent by reference go with the chunk GC,
 *      after its grace, unless a later checkpoint holds them again. Also when the chain is
 *      already cut at C (a retried clear completes a release a crash left undone).
 * `fence`: the compactor's lease check, when the compactor cuts.
 */
export const cutAtClear = async (
  deps: { records: RecordStore; states: StateStore },
  at: { tenant: string; stream: string; fence?: TransactOp },
): Promise<boolean> => {
  const { records, states } = deps;
  const { tenant, stream } = at;
  // A merge never crosses an uncut clear (compact-merge.ts step 4 checks clearedSeq), so the
  // index record ending at C is there until the cut.
  const item = await records.get(headKey(tenant, stream));
  const head = item && toHead(item);
  const seq = head?.clearedSeq;
  if (!head || seq === undefined || head.status !== undefined) return false;
  if (head.prunedSeq === seq) await states.chunks.releaseHeldBefore(tenant, stream, seq);
  if ((head.prunedSeq ?? 0) >= seq) return false;
  const indexItem = await records.get(segmentIndexKey(tenant, stream, seq));
  if (!indexItem) return false;
  const index = toSegmentIndex(indexItem);
  await states.writeBaseAt(tenant, stream, seq);
  try {
    await records.transact([
      ...(at.fence ? [at.fence] : []),
      {
        kind: 'update',
        key: headKey(tenant, stream),
        update: { set: { prunedSeq: seq, prunedHash: index.lastHash } },
        conditions: [
          { op: 'attrNotExists', attr: 'status' },
          {
            op: 'any',
            conditions: [
              { op: 'attrNotExists', attr: 'prunedSeq' },
              { op: 'lt', attr: 'prunedSeq', value: seq },
            ],
          },
        ],
      },
      {
        kind: 'check',
        key: segmentIndexKey(tenant, stream, seq),
        conditions: [{ op: 'eq', attr: 'lastHash', value: index.lastHash }],
      },
    ]);
  } catch (err) {
    if (err instanceof ConflictError) return false;
    throw err;
  }
  await states.chunks.releaseHeldBefore(tenant, stream, seq);
  return true;
};

/** True when the stream's head holds a clear the chain is not cut at yet (and is not deleted). */
export const clearUncut = async (
  records: RecordStore,
  at: { tenant: string; stream: string },
): Promise<boolean> => {
  const item = await records.get(headKey(at.tenant, at.stream));
  const head = item && toHead(item);
  const seq = head?.clearedSeq;
  return !!head && seq !== undefined && head.status === undefined && (head.prunedSeq ?? 0) < seq;
};
