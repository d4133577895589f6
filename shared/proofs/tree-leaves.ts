import { LayoutRaceError } from '../chain/chain-head.js';
import { type HeadRecord, type SegmentIndexRecord, toSegmentIndex } from '../chain/layout.js';
import { pad16, SEGMENT_INDEX_PREFIX, streamPk } from '../chain/storage-keys.js';
import { InvalidFormatError, PrunedError, TamperedLedgerError } from '../domain/errors.js';
import { eventLeafHash } from '../domain/merkle/index.js';
import { decodeSegment } from '../domain/segment.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';

/**
 * The leaf hashes of a range of a stream's tree (event seq `treeBase + i + 1` is leaf i), for
 * the compactor's tiles (tree-tiles.ts) and a proof's few untiled leaves (tree-source.ts).
 *
 *   1. The index records of the range, in pages of up to INDEX_PAGE: one query per thousand
 *      segments. They are the trusted anchor every read verifies segments against (written
 *      in the commit's transaction with the head), and each must link to the one before
 *      (firstSeq, prevHash); a gap is a LayoutRaceError (a concurrent merge or prune: the
 *      caller starts again, as every read does).
 *   2. A segment whose only event in the range is its last one (every segment of a stream
 *      appended one event at a time) gives its leaf from the record's `lastHash`: no read of
 *      the segment, which on S3 costs a GET (and ~0.7 ms of SDK CPU) per leaf.
 *   3. Other segments are fetched, `concurrency` at a time in a sliding window (no barrier
 *      per batch), and verified against their record as any read does: their chain hashes
 *      are the leaves.
 *
 * Nothing is written, so a crash anywhere leaves nothing to clean up.
 */

/** Index records per query (DynamoDB answers up to 1 MB per page: records are ~0.3 KB). */
export const INDEX_PAGE = 1000;

export interface LeafStores {
  objects: ObjectStore;
  records: RecordStore;
}

export interface LeafRange {
  tenant: string;
  stream: string;
  head: HeadRecord;
  treeBase: number;
}

export const segmentLeaves = async (
  stores: LeafStores,
  at: LeafRange,
  start: number,
  end: number,
  concurrency = 8,
): Promise<Uint8Array[]> => {
  const { tenant, stream, head, treeBase } = at;
  const from = treeBase + start + 1;
  const to = treeBase + end;
  if (end <= start) return [];
  // Below the pruning point, leaves are read while their segments are still kept (a cut made
  // by a session history's clear before the compactor's visit wrote the tiles: clear-cut.ts);
  // once the clean-up removed them, ErrPruned.
  const pruned = (head.prunedSeq ?? 0) >= from;
  const entries = await indexRecords(stores.records, tenant, stream, from, to).catch(
    (err: unknown) => {
      if (pruned && err instanceof LayoutRaceError)
        throw new PrunedError(stream, head.prunedSeq ?? 0);
      throw err;
    },
  );
  const leaves: Uint8Array[] = new Array(end - start);
  const fetches: Array<() => Promise<void>> = [];
  for (const entry of entries) {
    const lo = Math.max(from, entry.firstSeq);
    const hi = Math.min(to, entry.lastSeq);
    if (lo === entry.lastSeq) {
      leaves[lo - from] = eventLeafHash(entry.lastHash);
      continue;
    }
    fetches.push(async () => {
      for (const [i, hash] of (await segmentHashes(stores.objects, at, entry, lo, hi)).entries()) {
        leaves[lo + i - from] = eventLeafHash(hash);
      }
    });
  }
  await pool(fetches, concurrency);
  return leaves;
};

/**
 * The leaves of consecutive steps, the next step's read while the caller writes this one's
 * tiles (the GETs of a step otherwise wait for its PUTs and record write). `settle` waits for
 * a read ahead that nobody took (a pass that stopped): nothing is left in flight.
 */
export class LeafSteps {
  readonly #stores: LeafStores;
  readonly #at: LeafRange;
  readonly #concurrency: number;
  #ahead: { start: number; end: number; leaves: Promise<Uint8Array[]> } | undefined;

  constructor(stores: LeafStores, at: LeafRange, concurrency: number) {
    this.#stores = stores;
    this.#at = at;
    this.#concurrency = concurrency;
  }

  /** Leaves [start, end): the read ahead if it was of this range, else read now. */
  read(start: number, end: number): Promise<Uint8Array[]> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    if (ahead && ahead.start === start && ahead.end === end) return ahead.leaves;
    return segmentLeaves(this.#stores, this.#at, start, end, this.#concurrency);
  }

  /** Starts reading leaves [start, end) for the next `read` (an empty range: nothing). */
  readAhead(start: number, end: number): void {
    if (end <= start) return;
    const leaves = segmentLeaves(this.#stores, this.#at, start, end, this.#concurrency);
    leaves.catch(() => undefined); // judged by the `read` that takes it, if any
    this.#ahead = { start, end, leaves };
  }

  async settle(): Promise<void> {
    await this.#ahead?.leaves.catch(() => undefined);
    this.#ahead = undefined;
  }
}

/** 1. The linked index records of the segments holding seqs from..to. */
const indexRecords = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  from: number,
  to: number,
): Promise<SegmentIndexRecord[]> => {
  const entries: SegmentIndexRecord[] = [];
  let after: string | undefined = `${SEGMENT_INDEX_PREFIX}${pad16(from - 1)}`;
  let last: SegmentIndexRecord | undefined;
  while (after !== undefined && (last?.lastSeq ?? from - 1) < to) {
    // Each record holds one seq or more: no more than the seqs left are needed.
    const limit = Math.min(INDEX_PAGE, to - (last?.lastSeq ?? from - 1));
    const page = await records.query(streamPk(tenant, stream), {
      skPrefix: SEGMENT_INDEX_PREFIX,
      after,
      limit,
    });
    for (const item of page.items) {
      const entry = toSegmentIndex(item);
      const linked = last
        ? entry.firstSeq === last.lastSeq + 1 && entry.prevHash === last.lastHash
        : entry.firstSeq <= from;
      if (!linked) {
        throw new LayoutRaceError(last ? last.lastSeq + 1 : from, 'segment index has a gap');
      }
      entries.push(entry);
      last = entry;
      if (entry.lastSeq >= to) break;
    }
    after = page.next;
  }
  if ((last?.lastSeq ?? from - 1) < to) {
    throw new LayoutRaceError((last?.lastSeq ?? from - 1) + 1, 'events missing from the index');
  }
  return entries;
};

/** 3. The chain hashes (hex) of seqs lo..hi of a segment, verified against its record. */
const segmentHashes = async (
  objects: ObjectStore,
  at: LeafRange,
  entry: SegmentIndexRecord,
  lo: number,
  hi: number,
): Promise<string[]> => {
  const stored = await objects.get(entry.objectKey);
  if (!stored) throw new LayoutRaceError(entry.firstSeq, `segment ${entry.objectKey} is missing`);
  const segment = decodeSegment(
    stored.body,
    { tenant: at.tenant, stream: at.stream, firstSeq: entry.firstSeq, prevHash: entry.prevHash },
    { only: { from: lo, to: hi } },
  );
  if (segment.header.lastSeq !== entry.lastSeq || segment.header.lastHash !== entry.lastHash) {
    throw new TamperedLedgerError(entry.firstSeq, 'segment does not end where the index says');
  }
  const hashes = segment.events.map((e) => e.hash);
  if (hashes.length !== hi - lo + 1) {
    throw new InvalidFormatError(
      `segment ${entry.objectKey} holds ${hashes.length} of ${lo}..${hi}`,
    );
  }
  return hashes;
};

/**
 * Runs `tasks`, `limit` at a time (a new one starts as soon as one ends). After a failure no
 * task starts, and the first failure is thrown once those running have ended: nothing the
 * caller started is still in flight when it hears of the failure.
 */
export const pool = async (
  tasks: ReadonlyArray<() => Promise<void>>,
  limit: number,
): Promise<void> => {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      try {
        await task();
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  if (failure) throw failure.err;
};
