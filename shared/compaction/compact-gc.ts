import { toHead } from '../chain/layout.js';
import {
  GARBAGE_PREFIX,
  headKey,
  ORPHAN_PREFIX,
  parseSegmentKey,
  segmentPrefix,
  sweepKey,
} from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import { recordOrphan } from './compact-merge.js';
import {
  type CompactDeps,
  type CompactLimits,
  IO_CONCURRENCY,
  pastDeadline,
  readIndex,
  readPrefix,
  type Visit,
} from './compact-types.js';

/**
 * Deleting objects nobody needs, only after a grace period long enough for in-flight readers
 * (a reader that still fetches one after it is gone re-reads the index: reader.ts).
 *
 * Garbage records (`gc#{deleteAfter}#{tag}`) list objects a publish superseded (merges) or a
 * pruning cut off. Such an object can never be referenced again: the index only ever gets
 * coarser, and a stream deleted and created again has lost these records with its partition.
 * Once deleteAfter has passed: delete each object, then the record. Dies in between: the next
 * visit deletes them again (deleting a missing object is not an error).
 *
 * Orphan records (`orphan#{objectKey}`) name objects under `seg/` that no index record names
 * and no garbage record lists: a merged segment whose publish never happened (its compactor
 * died, or lost its lease), or a `seg/{n}` below the head re-created by a writer that paused
 * past the grace period (its commit fails). The sweep records them; once their grace has passed
 * a visit deletes the object if the index still does not name it, then the record.
 *
 * Why deleting an orphan is safe although an object delete cannot be fenced: orphan records
 * are written only by the lease holder (fenced), after its merges of the visit; a merge reads
 * the orphan record of its key before writing its object and publishes only if there is still
 * none (a transaction condition); a visit deletes an orphan's object before its record. So a
 * merge either sees the record and skips, or finds none because the deletion is over, and then
 * its own put re-creates the object it publishes.
 * A plain key `seg/{n}` is an orphan only when n <= the head's seq read before the index: an
 * append can commit only `seg/{head+1}`, so such a key can never be committed again.
 */

/**
 * Collects garbage and orphans whose grace has passed. `partial`: the visit ran out of time
 * with some of it left, so the caller schedules the stream's next visit now (no other record
 * would: the visits the merges scheduled for this garbage are the one running).
 */
export const collectGarbage = async (
  deps: CompactDeps,
  visit: Visit,
): Promise<'done' | 'partial'> => {
  const { objects, records, clock } = deps;
  const { tenant, stream } = visit;
  const now = clock.now();
  for (const item of await readPrefix(records, tenant, stream, GARBAGE_PREFIX)) {
    if (typeof item.deleteAfter !== 'number' || item.deleteAfter > now) break;
    if (pastDeadline(deps, visit)) return 'partial';
    const keys = Array.isArray(item.objects) ? item.objects.map(String) : [];
    await mapLimit(keys, IO_CONCURRENCY, (key) => objects.delete(key));
    visit.stats.objectsDeleted += keys.length;
    deps.crash?.('garbage-deleted');
    await records.delete({ pk: item.pk, sk: item.sk });
    deps.crash?.('garbage-cleared');
  }

  const orphans = (await readPrefix(records, tenant, stream, ORPHAN_PREFIX)).filter(
    (item) => typeof item.deleteAfter === 'number' && item.deleteAfter <= now,
  );
  if (orphans.length === 0) return 'done';
  const headItem = await records.get(headKey(tenant, stream));
  if (!headItem) return 'done';
  const head = toHead(headItem);
  const live = new Set((await readIndex(records, tenant, stream)).map((r) => r.objectKey));
  for (const item of orphans) {
    if (pastDeadline(deps, visit)) return 'partial';
    const key = String(item.objectKey);
    const parsed = parseSegmentKey(key);
    const orphaned =
      !live.has(key) && parsed !== undefined && (parsed.lastSeq ?? parsed.firstSeq) <= head.seq;
    if (orphaned) {
      await objects.delete(key);
      visit.stats.objectsDeleted++;
      deps.crash?.('garbage-deleted');
    }
    await records.delete({ pk: item.pk, sk: item.sk });
    deps.crash?.('garbage-cleared');
  }
  return 'done';
};

/**
 * Records an orphan for every object under the stream's `seg/` that nothing names (see
 * above), when a sweep is due (every merge publish asks for one, at its garbage's follow-up
 * visit; the request is cleared only once the sweep is done, so a crash repeats it). Reads the
 * head first, then the index, then lists: an append committed after the head was read names
 * a key above that head and is left alone.
 */
export const sweepOrphans = async (
  deps: CompactDeps,
  limits: CompactLimits,
  visit: Visit,
): Promise<void> => {
  const { objects, records, clock } = deps;
  const { tenant, stream } = visit;
  const request = await records.get(sweepKey(tenant, stream));
  if (typeof request?.dueAt !== 'number' || request.dueAt > clock.now()) return;
  const headItem = await records.get(headKey(tenant, stream));
  if (!headItem) return;
  const head = toHead(headItem);
  const known = new Set((await readIndex(records, tenant, stream)).map((r) => r.objectKey));
  for (const item of await readPrefix(records, tenant, stream, GARBAGE_PREFIX)) {
    if (Array.isArray(item.objects)) for (const key of item.objects) known.add(String(key));
  }
  for (const item of await readPrefix(records, tenant, stream, ORPHAN_PREFIX)) {
    known.add(String(item.objectKey));
  }
  let after: string | undefined;
  do {
    const page = await objects.list(segmentPrefix(tenant, stream), { after });
    for (const { key } of page.items) {
      if (known.has(key)) continue;
      const parsed = parseSegmentKey(key);
      if (!parsed || (parsed.lastSeq ?? parsed.firstSeq) > head.seq) continue;
      await recordOrphan(deps, limits, visit, key);
    }
    after = page.next;
    if (pastDeadline(deps, visit)) return;
  } while (after !== undefined);
  try {
    await records.delete(sweepKey(tenant, stream), {
      conditions: [{ op: 'eq', attr: 'dueAt', value: request.dueAt }],
    });
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err; // asked again meanwhile: sweep next time
  }
};
