import { toHead, toSegmentIndex, toSnapshotIndex } from '../chain/layout.js';
import {
  BASE_DUE_PREFIX,
  compactorLeaseKey,
  garbageKey,
  headKey,
  SEGMENT_INDEX_PREFIX,
  SNAPSHOT_INDEX_PREFIX,
  segmentIndexKey,
  snapshotIndexKey,
  snapshotPrefix,
  streamIndexKey,
  streamObjectPrefix,
  streamPk,
} from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import { decodeSegment } from '../domain/segment.js';
import type { Item, TransactOp } from '../ports/record-store.js';
import { cutAtClear } from '../state/clear-cut.js';
import { releaseRefs } from './chunk-gc.js';
import {
  type CompactDeps,
  type CompactLimits,
  IO_CONCURRENCY,
  pastDeadline,
  readIndex,
  readPrefix,
  type Visit,
  visitAt,
} from './compact-types.js';

/**
 * Retention, done by the compactor under the stream's lease.
 *
 * Expiry (head.expiresAt passed) deletes the whole stream, never leaving a partial one that
 * reads as whole:
 *   1. Mark: one transaction sets head.status = 'deleting' (condition: still unmarked and
 *      expiresAt unchanged, so a TTL extended meanwhile wins) and schedules a visit after the
 *      grace period. From here reads answer ErrStreamNotFound and appends are refused (their
 *      commit requires no status). Dies after 1: the stream stays marked; the visit continues.
 *   2. After the grace (in-flight readers and writers finish): delete every object under
 *      `t/{tenant}/s/{stream}/`, then every record of its partition but the head and the
 *      lease, then the head and the lease in one transaction. Dies anywhere in 2: the head is
 *      still there, marked; the next visit starts 2 again. A visit out of time stops and
 *      schedules the rest.
 * Once the head is gone the id is free: an append creates a new stream from genesis.
 * `DELETE /v1/streams/{id}` (stream-delete.ts) marks the head the same way, then this runs.
 *
 * A session history's clear (head.clearedSeq above prunedSeq: its request died before its
 * cut) is cut first (state/clear-cut.ts), and step 4 below then cleans up under it.
 *
 * Pruning (head.pruneAfterMs): segments whose events are all older than the horizon go, while
 * everything after them stays verifiable:
 *   1. Pick the pruning point P: the end of the longest prefix of segments created before now
 *      minus the horizon (a segment boundary; its hash is its index record's lastHash).
 *   2. Write a base snapshot at P (hydrated and verified), so the state at any seq >= P still
 *      hydrates. Dies after 2: an extra base; step 1 picks P again.
 *   3. One transaction: head.prunedSeq = P, head.prunedHash = hash at P (condition: prunedSeq
 *      unchanged, index record of P still ends there, lease ours). Reads before P now answer
 *      ErrPruned and verification starts from (P, hash). Dies after 3: the records below P
 *      are invisible to readers (they start after prunedSeq) and cleaned up next.
 *   4. Clean up: delete segment records <= P, snapshot records < P and due bases <= P, in
 *      transactions that also put a garbage record for their objects (deleted after the
 *      grace). The next pruning visit is scheduled when the oldest kept segment ages out.
 *      Kept below P: the segments from the one holding the base's stateSeq (the last delta
 *      or fork at or before P), whose recorded digest binds the base at P to the chain
 *      (state-binding.ts); reads still answer ErrPruned there, and the segments go once a
 *      later pruning point has a later stateSeq. A stream with no checkpoint for a long
 *      time keeps its last checkpoint's segment and those after it (docs/ledger-format.md).
 */

const deleteOp = (item: Item): TransactOp => ({
  kind: 'delete',
  key: { pk: item.pk, sk: item.sk },
});

/** Expiry (see above); 'none' when the stream is not expired. */
export const expireStream = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
): Promise<'none' | 'waiting' | 'deleted' | 'partial'> => {
  const { records, objects, clock } = deps;
  const { tenant, stream, head } = visit;
  const now = clock.now();
  if (head.status !== 'deleting') {
    if (head.expiresAt === undefined || head.expiresAt > now) return 'none';
    try {
      await records.transact([
        visit.fence,
        {
          kind: 'update',
          key: headKey(tenant, stream),
          update: { set: { status: 'deleting', deletingAt: now } },
          conditions: [
            { op: 'attrNotExists', attr: 'status' },
            { op: 'eq', attr: 'expiresAt', value: head.expiresAt },
            { op: 'eq', attr: 'createdAt', value: head.createdAt },
          ],
        },
        visitAt(visit, now + limits.graceMs),
      ]);
    } catch (err) {
      if (err instanceof ConflictError) return 'none'; // extended meanwhile, or lease lost
      throw err;
    }
    deps.crash?.('deletion-marked');
    return 'waiting';
  }
  const readyAt = (head.deletingAt ?? 0) + limits.graceMs;
  if (now < readyAt) {
    await records.transact([visit.fence, visitAt(visit, readyAt)]);
    return 'waiting';
  }

  let after: string | undefined;
  do {
    if (pastDeadline(deps, visit)) return 'partial';
    const page = await objects.list(streamObjectPrefix(tenant, stream), { after, limit: 500 });
    await mapLimit(page.items, IO_CONCURRENCY, ({ key }) => objects.delete(key));
    visit.stats.objectsDeleted += page.items.length;
    after = page.next;
  } while (after !== undefined);
  deps.crash?.('stream-objects-deleted');

  const keep = new Set([headKey(tenant, stream).sk, compactorLeaseKey(tenant, stream).sk]);
  after = undefined;
  do {
    const page = await records.query(streamPk(tenant, stream), { after, limit: 100 });
    for (const item of page.items) {
      if (keep.has(item.sk)) continue;
      if (pastDeadline(deps, visit)) return 'partial';
      await records.delete({ pk: item.pk, sk: item.sk });
    }
    after = page.next;
  } while (after !== undefined);
  deps.crash?.('stream-records-deleted');
  // Its chunk references (bases, fork origin): the tenant's GC deletes what nothing else reaches.
  await releaseRefs({ ...deps, chunks: deps.states.chunks }, tenant, stream);

  await records.transact([
    {
      kind: 'delete',
      key: headKey(tenant, stream),
      conditions: [
        { op: 'eq', attr: 'status', value: 'deleting' },
        { op: 'eq', attr: 'createdAt', value: head.createdAt },
      ],
    },
    { kind: 'delete', key: compactorLeaseKey(tenant, stream), conditions: visit.fence.conditions },
    // Its entry in the tenant's stream index (stream-list.ts), with the tombstone.
    { kind: 'delete', key: streamIndexKey(tenant, stream) },
  ]);
  deps.crash?.('stream-deleted');
  visit.stats.streamsDeleted++;
  return 'deleted';
};

/** When the segment's newest event was sealed (legacy records: read from its header). */
const createdAtOf = async (
  deps: CompactDeps,
  visit: Visit,
  record: { firstSeq: number; prevHash: string; objectKey: string; createdAt?: number },
): Promise<number | undefined> => {
  if (record.createdAt !== undefined) return record.createdAt;
  const stored = await deps.objects.get(record.objectKey);
  if (!stored) return undefined;
  const { tenant, stream } = visit;
  const expect = { tenant, stream, firstSeq: record.firstSeq, prevHash: record.prevHash };
  return decodeSegment(stored.body, expect, { verifyOnly: true }).header.createdAt;
};

/** Pruning steps 1-3 (see above); true when the pruning point moved. */
export const pruneStream = async (deps: CompactDeps, visit: Visit): Promise<boolean> => {
  const { records, clock, states } = deps;
  const { tenant, stream } = visit;
  // A session history's clear whose request died before its cut (clear-cut.ts): cut first.
  const cleared = visit.head.clearedSeq;
  if (cleared !== undefined && cleared > (visit.head.prunedSeq ?? 0)) {
    const cut = await cutAtClear({ records, states }, { tenant, stream, fence: visit.fence });
    const item = cut ? await records.get(headKey(tenant, stream)) : undefined;
    if (item) {
      visit.head = toHead(item);
      visit.stats.streamsPruned++;
    }
  }
  const { head } = visit;
  if (head.pruneAfterMs === undefined) return false;
  const now = clock.now();
  const cutoff = now - head.pruneAfterMs;
  const floor = head.prunedSeq ?? 0;
  let point: { seq: number; hash: string } | undefined;
  let nextAt: number | undefined;
  for (const record of await readIndex(records, tenant, stream, floor)) {
    if (record.lastSeq > head.seq) break;
    const createdAt = await createdAtOf(deps, visit, record);
    if (createdAt === undefined) break;
    if (createdAt > cutoff) {
      nextAt = createdAt + head.pruneAfterMs + 1;
      break;
    }
    point = { seq: record.lastSeq, hash: record.lastHash };
  }
  if (nextAt !== undefined) await records.transact([visit.fence, visitAt(visit, nextAt)]);
  if (!point) return false;

  await states.writeBaseAt(tenant, stream, point.seq);
  visit.stats.snapshotsWritten++;
  deps.crash?.('prune-snapshot-written');
  try {
    await records.transact([
      visit.fence,
      {
        kind: 'update',
        key: headKey(tenant, stream),
        update: { set: { prunedSeq: point.seq, prunedHash: point.hash } },
        conditions: [
          { op: 'attrNotExists', attr: 'status' },
          head.prunedSeq === undefined
            ? { op: 'attrNotExists', attr: 'prunedSeq' }
            : { op: 'eq', attr: 'prunedSeq', value: head.prunedSeq },
        ],
      },
      {
        kind: 'check',
        key: segmentIndexKey(tenant, stream, point.seq),
        conditions: [{ op: 'eq', attr: 'lastHash', value: point.hash }],
      },
    ]);
  } catch (err) {
    if (err instanceof ConflictError) return false;
    throw err;
  }
  deps.crash?.('pruned');
  visit.head = { ...head, prunedSeq: point.seq, prunedHash: point.hash };
  visit.stats.streamsPruned++;
  return true;
};

/** Pruning step 4: records below the pruning point go, their objects to the garbage. */
export const cleanUpPruned = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
): Promise<void> => {
  const { records, objects, clock } = deps;
  const { tenant, stream } = visit;
  const floor = visit.head.prunedSeq;
  if (floor === undefined) return;
  const doomed: Array<{ item: Item; objectKey?: string }> = [];
  // The segments from the one holding the floor base's state-setting event are kept: that
  // event's digest binds the base (state-binding.ts). A base written before stateSeq was
  // kept names none: everything up to the floor goes, as before.
  const floorBase = await records.get(snapshotIndexKey(tenant, stream, floor));
  const stateSeq = floorBase ? toSnapshotIndex(floorBase).stateSeq : undefined;
  const keepFrom = stateSeq !== undefined && stateSeq >= 1 ? stateSeq : floor + 1;
  for (const item of await readPrefix(records, tenant, stream, SEGMENT_INDEX_PREFIX)) {
    const record = toSegmentIndex(item);
    if (record.lastSeq >= keepFrom) break;
    doomed.push({ item, objectKey: record.objectKey });
  }
  for (const item of await readPrefix(records, tenant, stream, SNAPSHOT_INDEX_PREFIX)) {
    const record = toSnapshotIndex(item);
    if (record.seq < floor) doomed.push({ item, objectKey: record.objectKey });
  }
  for (const item of await readPrefix(records, tenant, stream, BASE_DUE_PREFIX)) {
    if (typeof item.seq === 'number' && item.seq <= floor) doomed.push({ item });
  }
  if (doomed.length === 0) return;
  // A fork's origin snapshot (seq 0) is named only by its first event, now pruned.
  const origins = await objects.list(snapshotPrefix(tenant, stream, 0));
  const extra = origins.items.map((o) => o.key);
  for (let i = 0; i < doomed.length; i += 90) {
    const chunk = doomed.slice(i, i + 90);
    const now = clock.now();
    const keys = chunk.flatMap((d) => (d.objectKey ? [d.objectKey] : []));
    if (i === 0) keys.push(...extra);
    await records.transact([
      visit.fence,
      ...chunk.map((d) => deleteOp(d.item)),
      {
        kind: 'put',
        item: {
          ...garbageKey(tenant, stream, now + limits.graceMs, `prune-${floor}-${i}`),
          objects: keys,
          deleteAfter: now + limits.graceMs,
        },
      },
      visitAt(visit, visit.gcDueAt),
    ]);
  }
  // References of the bases below the pruning point, and of a fork's origin, go with them.
  await releaseRefs(
    { ...deps, chunks: deps.states.chunks },
    tenant,
    stream,
    (kind, id) => kind === 'fork' || (kind === 'base' && Number(id) < floor),
  );
  deps.crash?.('prune-cleaned');
};
