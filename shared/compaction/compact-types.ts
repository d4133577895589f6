import { type HeadRecord, type SegmentIndexRecord, toSegmentIndex } from '../chain/layout.js';
import { dueKey, SEGMENT_INDEX_PREFIX, segmentIndexSk, streamPk } from '../chain/storage-keys.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';
import type { StateStore } from '../state/state.js';

/** The steps after which a test may make the compactor die (see compactor.ts). */
export type CompactStep =
  | 'lease-acquired'
  | 'base-written'
  | 'tiles-written'
  | 'merge-written'
  | 'merge-published'
  | 'garbage-deleted'
  | 'garbage-cleared'
  | 'orphan-recorded'
  | 'prune-snapshot-written'
  | 'pruned'
  | 'prune-cleaned'
  | 'deletion-marked'
  | 'stream-objects-deleted'
  | 'stream-records-deleted'
  | 'stream-deleted'
  | 'expiry-read'
  | 'expiry-committed'
  | 'lease-released'
  | 'work-removed';

/** Test hook: throw from it to simulate the compactor dying right after `step`. */
export type CompactCrashHook = (step: CompactStep) => void;

/** Counters of one run, reported in its one log line. */
export interface CompactionStats {
  /** Streams visited. */
  examined: number;
  /** Streams where at least one merge was published. */
  compacted: number;
  /** Streams skipped because another compactor holds them. */
  busy: number;
  /** Streams whose visit failed (reported one by one to onError). */
  errors: number;
  segmentsMerged: number;
  segmentsWritten: number;
  /** Bytes of the merged segments before, and of what replaced them after. */
  bytesBefore: number;
  bytesAfter: number;
  objectsDeleted: number;
  snapshotsWritten: number;
  streamsPruned: number;
  streamsDeleted: number;
  orphansFound: number;
  /** Tiles of the streams' Merkle trees written (tree-tiles.ts). */
  tilesWritten: number;
  /** Streams written before trees that got their tree (the backfill). */
  treesBackfilled: number;
  /** Signed tree heads published to the witness, and objects written (witness.ts). */
  headsWitnessed: number;
  witnessObjects: number;
  /** Chunks the tenant chunk GC deleted (chunk-gc.ts). */
  chunksDeleted: number;
  /** Expired entries deleted from states (compact-expiry.ts). */
  entriesExpired: number;
}

export const emptyStats = (): CompactionStats => ({
  examined: 0,
  compacted: 0,
  busy: 0,
  errors: 0,
  segmentsMerged: 0,
  segmentsWritten: 0,
  bytesBefore: 0,
  bytesAfter: 0,
  objectsDeleted: 0,
  snapshotsWritten: 0,
  streamsPruned: 0,
  streamsDeleted: 0,
  orphansFound: 0,
  tilesWritten: 0,
  treesBackfilled: 0,
  headsWitnessed: 0,
  witnessObjects: 0,
  chunksDeleted: 0,
  entriesExpired: 0,
});

export interface CompactDeps {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  states: StateStore;
  crash?: CompactCrashHook;
}

export interface CompactLimits {
  targetBytes: number;
  graceMs: number;
  leaseMs: number;
  maxInputs: number;
}

/** One visit of one stream, made while holding its lease. */
export interface Visit {
  tenant: string;
  stream: string;
  /** Read after the lease was taken; steps update it as they move it. */
  head: HeadRecord;
  /** The condition every record write of the visit carries: the lease is still ours. */
  fence: TransactOp;
  /** The visit stops (and schedules the rest) once the clock passes this: the run's deadline. */
  deadline: number;
  /** Renews the lease (before each merge round); false once it was lost to another compactor. */
  renew: () => Promise<boolean>;
  /** When garbage written by this visit is all past its grace: its follow-up visit. */
  gcDueAt: number;
  stats: CompactionStats;
}

/** Object requests a visit keeps in flight at once (reads of a run, deletes). */
export const IO_CONCURRENCY = 16;

export const pastDeadline = (deps: CompactDeps, visit: Visit): boolean =>
  deps.clock.now() >= visit.deadline;

/** The record of the stream's visit scheduled at `at`. */
export const visitItem = (visit: Pick<Visit, 'tenant' | 'stream'>, at: number): Item => ({
  ...dueKey(visit.tenant, visit.stream, at),
  tenant: visit.tenant,
  stream: visit.stream,
});

/** A put of the stream's scheduled visit at `at`. */
export const visitAt = (visit: Pick<Visit, 'tenant' | 'stream'>, at: number): TransactOp => ({
  kind: 'put',
  item: visitItem(visit, at),
});

/** The segment index records with lastSeq > afterSeq, in order. */
export const readIndex = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  afterSeq = 0,
): Promise<SegmentIndexRecord[]> => {
  const out: SegmentIndexRecord[] = [];
  let after: string | undefined = segmentIndexSk(afterSeq);
  do {
    const page = await records.query(streamPk(tenant, stream), {
      skPrefix: SEGMENT_INDEX_PREFIX,
      after,
      limit: 100,
    });
    for (const item of page.items) out.push(toSegmentIndex(item));
    after = page.next;
  } while (after !== undefined);
  return out;
};

/** Every item of a stream partition under an sk prefix, in order. */
export const readPrefix = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  skPrefix: string,
) => {
  const out = [];
  let after: string | undefined;
  do {
    const page = await records.query(streamPk(tenant, stream), { skPrefix, after, limit: 100 });
    out.push(...page.items);
    after = page.next;
  } while (after !== undefined);
  return out;
};
