import type { SegmentIndexRecord } from '../chain/layout.js';
import {
  garbageKey,
  headKey,
  mergedSegmentKey,
  orphanKey,
  segmentIndexKey,
  segmentPrefix,
  sweepKey,
} from '../chain/storage-keys.js';
import { ConflictError, TamperedLedgerError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import { decodeSegment, mergeSegments } from '../domain/segment.js';
import { MAX_TRANSACT_OPS, type TransactOp } from '../ports/record-store.js';
import {
  type CompactDeps,
  type CompactLimits,
  IO_CONCURRENCY,
  pastDeadline,
  readIndex,
  type Visit,
  visitAt,
} from './compact-types.js';

/**
 * Merging runs of small segments into larger ones, without changing any event or hash.
 *
 * Planning: the index is cut into windows of consecutive segments, each below the target size
 * in total (and at most `maxInputs` segments, so that a publish fits one transaction). In each
 * window the longest suffix whose largest segment is no bigger than the rest together is merged:
 * every merge at least doubles its largest input, so a byte is rewritten at most
 * log2(target / smallest segment) times however the stream grows.
 *
 * One merge, while holding the stream's lease:
 *   1. Read every input and verify it against its index record (as a reader would), and the
 *      links between them. A segment that does not verify is never merged (ErrTamperedLedger).
 *   2. If an orphan record names the merged key, skip: a deletion of that key may be under way.
 *   3. Write the merged segment at `seg/{first}-{last}` with put-if-absent. Its bytes are a
 *      function of the run alone, so a compactor that died here left the same bytes, and the
 *      retry's put succeeds. Dies after 3: the object is unreferenced; the next visit merges
 *      the same run again (same key, same bytes) or, if the run grew, the orphan sweep deletes
 *      it after the grace period.
 *   4. Publish in ONE transaction: the lease is still ours; no orphan record names the key;
 *      the head's clearedSeq is the one the visit read (a session clear committed since then
 *      is not cut yet: its segment must still end at it, clear-cut.ts), else replan next visit;
 *      the index record of the run's last segment (sk seg#{lastSeq}, still naming its old
 *      object) now names the merged object with the run's firstSeq and prevHash; the records
 *      of the other inputs (each still naming its object) are deleted; a garbage record lists
 *      the superseded objects with deleteAfter = now + grace; the stream's follow-up visit is
 *      scheduled then, with an orphan sweep (which finds what step 3 of a dead compactor
 *      left). Readers move from the old layout to the new one in this one step; one
 *      that fetched old objects keeps reading them during the grace period. Dies after 4: the
 *      merge is done; the garbage is collected by the scheduled visit.
 */

/** The longest suffix whose largest member is no bigger than all the others together. */
const tieredSuffix = (window: SegmentIndexRecord[]): SegmentIndexRecord[] => {
  let best: SegmentIndexRecord[] = [];
  let sum = 0;
  let max = 0;
  for (let i = window.length - 1; i >= 0; i--) {
    const size = window[i]?.size ?? 0;
    sum += size;
    max = Math.max(max, size);
    if (window.length - i >= 2 && max <= sum - max) best = window.slice(i);
  }
  return best;
};

/** Runs to merge, from the index records in seq order (see above). */
export const planRuns = (
  records: SegmentIndexRecord[],
  targetBytes: number,
  maxInputs: number,
): SegmentIndexRecord[][] => {
  const runs: SegmentIndexRecord[][] = [];
  let window: SegmentIndexRecord[] = [];
  let total = 0;
  const flush = () => {
    const run = tieredSuffix(window);
    if (run.length >= 2) runs.push(run);
    window = [];
    total = 0;
  };
  for (const record of records) {
    const size = record.size ?? 0;
    if (size >= targetBytes) {
      flush();
      continue;
    }
    if (window.length >= maxInputs || total + size > targetBytes) flush();
    window.push(record);
    total += size;
  }
  flush();
  return runs;
};

/** Inputs of one publish: its transaction holds inputs + 6 operations. */
export const maxMergeInputs = (limit: number): number => Math.min(limit, MAX_TRANSACT_OPS - 6);

/** Merges and publishes one run; false when it had to be left for a later visit. */
export const mergeRun = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
  run: SegmentIndexRecord[],
): Promise<boolean> => {
  const { objects, records, clock } = deps;
  const { tenant, stream } = visit;
  const first = run[0] as SegmentIndexRecord;
  const last = run.at(-1) as SegmentIndexRecord;

  for (const [i, record] of run.entries()) {
    const before = run[i - 1];
    if (before && (record.firstSeq !== before.lastSeq + 1 || record.prevHash !== before.lastHash)) {
      throw new TamperedLedgerError(record.firstSeq, 'segment index has a gap or a broken link');
    }
  }
  const bodies = await mapLimit(run, IO_CONCURRENCY, (r) => objects.get(r.objectKey));
  const parts = [];
  for (const [i, record] of run.entries()) {
    const stored = bodies[i];
    if (!stored) return false; // changed under us (only a fenced-out compactor could): replan
    const { header } = decodeSegment(
      stored.body,
      { tenant, stream, firstSeq: record.firstSeq, prevHash: record.prevHash },
      { verifyOnly: true },
    );
    if (header.lastSeq !== record.lastSeq || header.lastHash !== record.lastHash) {
      throw new TamperedLedgerError(record.firstSeq, 'segment does not end where the index says');
    }
    parts.push({ bytes: stored.body, header });
  }
  // Encrypted segments (format 2) are merged only by a compactor holding the stream's keys,
  // which is not built yet (issue 28): they stay as written, each readable and verified.
  if (parts.some((p) => p.header.format !== 1)) return false;
  const merged = mergeSegments(parts);
  // The merged bytes must verify exactly as their inputs did: same events, same hashes.
  decodeSegment(
    merged.bytes,
    { tenant, stream, firstSeq: first.firstSeq, prevHash: first.prevHash },
    { verifyOnly: true },
  );

  const key = mergedSegmentKey(tenant, stream, first.firstSeq, last.lastSeq);
  const orphan = orphanKey(tenant, stream, key);
  if (await records.get(orphan)) return false;
  try {
    await objects.putIfAbsent(key, merged.bytes);
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    // Other bytes at a key only this run can produce: left by a stream of the same id that
    // was deleted. Let the orphan sweep's rules delete it; merge once it is gone.
    await recordOrphan(deps, limits, visit, key);
    return false;
  }
  deps.crash?.('merge-written');

  const now = clock.now();
  const cleared = visit.head.clearedSeq;
  const ops: TransactOp[] = [
    visit.fence,
    { kind: 'check', key: orphan, conditions: [{ op: 'notExists' }] },
    // No clear committed since the visit read the head: its segment must end at it until cut.
    {
      kind: 'check',
      key: headKey(tenant, stream),
      conditions: [
        cleared === undefined
          ? { op: 'attrNotExists', attr: 'clearedSeq' }
          : { op: 'eq', attr: 'clearedSeq', value: cleared },
      ],
    },
    {
      kind: 'update',
      key: segmentIndexKey(tenant, stream, last.lastSeq),
      update: {
        set: {
          firstSeq: first.firstSeq,
          prevHash: first.prevHash,
          objectKey: key,
          size: merged.bytes.length,
          createdAt: merged.header.createdAt,
        },
      },
      conditions: [
        { op: 'eq', attr: 'objectKey', value: last.objectKey },
        { op: 'eq', attr: 'firstSeq', value: last.firstSeq },
      ],
    },
    ...run.slice(0, -1).map(
      (r): TransactOp => ({
        kind: 'delete',
        key: segmentIndexKey(tenant, stream, r.lastSeq),
        conditions: [{ op: 'eq', attr: 'objectKey', value: r.objectKey }],
      }),
    ),
    {
      kind: 'put',
      item: {
        ...garbageKey(tenant, stream, now + limits.graceMs, `${first.firstSeq}-${last.lastSeq}`),
        objects: run.map((r) => r.objectKey),
        deleteAfter: now + limits.graceMs,
      },
    },
    { kind: 'put', item: { ...sweepKey(tenant, stream), dueAt: visit.gcDueAt } },
    visitAt(visit, visit.gcDueAt),
  ];
  try {
    await records.transact(ops);
  } catch (err) {
    if (err instanceof ConflictError) return false; // lease lost or index changed: replan
    throw err;
  }
  deps.crash?.('merge-published');
  visit.stats.segmentsMerged += run.length;
  visit.stats.segmentsWritten++;
  visit.stats.bytesBefore += parts.reduce((n, p) => n + p.bytes.length, 0);
  visit.stats.bytesAfter += merged.bytes.length;
  return true;
};

/** Marks an unreferenced object for deletion once the grace period has passed. */
export const recordOrphan = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
  objectKey: string,
): Promise<boolean> => {
  const deleteAfter = deps.clock.now() + limits.graceMs;
  try {
    await deps.records.transact([
      visit.fence,
      {
        kind: 'put',
        item: { ...orphanKey(visit.tenant, visit.stream, objectKey), objectKey, deleteAfter },
        conditions: [{ op: 'notExists' }],
      },
      visitAt(visit, deleteAfter),
    ]);
  } catch (err) {
    if (err instanceof ConflictError) return false;
    throw err;
  }
  visit.stats.orphansFound++;
  deps.crash?.('orphan-recorded');
  return true;
};

/** Sizes older index records lack, from a listing: no merge may outgrow the target. */
const fillSizes = async (deps: CompactDeps, visit: Visit, index: SegmentIndexRecord[]) => {
  const unknown = new Map(index.filter((r) => r.size === undefined).map((r) => [r.objectKey, r]));
  let after: string | undefined;
  while (unknown.size > 0) {
    const page = await deps.objects.list(segmentPrefix(visit.tenant, visit.stream), { after });
    for (const { key, size } of page.items) {
      const record = unknown.get(key);
      if (record) record.size = size;
      unknown.delete(key);
    }
    after = page.next;
    if (after === undefined) break;
  }
};

/**
 * Merges in rounds until nothing is left to merge or the run's time is up ('partial'): each
 * round plans the runs of the index as it is now (at most `maxInputs` inputs each, so that a
 * publish fits one transaction, on every adapter) and merges them, so runs merged in one round
 * merge further in the next, toward the target size. Before each merge the lease is renewed
 * (a lost lease ends the visit). The first merge of a visit is made whatever the clock says:
 * a visit, and so a pass, that leaves work for later has merged something first.
 */
export const mergeStream = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
): Promise<'done' | 'partial'> => {
  const maxInputs = maxMergeInputs(limits.maxInputs);
  let published = false;
  for (;;) {
    if (published && pastDeadline(deps, visit)) return 'partial';
    const { prunedSeq, clearedSeq } = visit.head;
    // A clear not cut yet (clear-cut.ts): its segment must still end at it, so the segments up
    // to it are left as they are until the cut.
    const floor =
      clearedSeq !== undefined && clearedSeq > (prunedSeq ?? 0) ? clearedSeq : prunedSeq;
    const index = await readIndex(deps.records, visit.tenant, visit.stream, floor);
    await fillSizes(deps, visit, index);
    const runs = planRuns(index, limits.targetBytes, maxInputs);
    let progressed = false;
    for (const run of runs) {
      if (published && pastDeadline(deps, visit)) return 'partial';
      if (!(await visit.renew())) return 'partial';
      if (await mergeRun(deps, limits, visit, run)) progressed = published = true;
    }
    if (!progressed) return 'done';
  }
};
