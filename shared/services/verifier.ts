import { TamperedLedgerError } from '../domain/errors.js';
import { genesisHash, payloadJsonOf, type SealedEvent } from '../domain/event.js';
import type { DecodeOptions } from '../domain/segment.js';
import { decodeAnySnapshot, type SnapshotExpectation } from '../domain/snapshot.js';
import { FORK_EVENT, type ForkPayload } from '../domain/state.js';
import { type DigestVersion, digestVersionOf } from '../domain/state-digest.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import { ChunkStore } from './chunk-store.js';
import { mapLimit } from './compact-types.js';
import {
  type SegmentIndexRecord,
  SNAPSHOT_INDEX_PREFIX,
  type SnapshotIndexRecord,
  snapshotIndexKey,
  streamPk,
  toSnapshotIndex,
} from './layout.js';
import type { Reader } from './reader.js';
import { ChunkSnapshots } from './snapshot-v2.js';
import { objectOf, type TamperedObject, TamperedObjectError } from './tampered.js';

/**
 * /verify: every object a read depends on, checked against what the trusted records say.
 *
 *   1. The base snapshot records of the stream are listed (before the head is read: a
 *      snapshot written after that is not judged, like a segment committed after it).
 *   2. The chain is verified from genesis or the pruning point to the head (Reader), and the
 *      head against its end. On the way, the chain hash at every snapshot's seq is kept, and
 *      the first event; only the segments that hold one are decoded past their hashes.
 *   3. Each snapshot from the pruning point to the head: its record must name the chain hash
 *      at its seq, and its object must decode, name this stream, seq and hash, and hash to
 *      its state digest. An object missing while its record is gone too was pruned meanwhile.
 *   4. A fork (first event `hefesto.fork`, not pruned): the origin snapshot it names must
 *      decode to the state digest it records.
 * The answer names the first bad object: `segment` (with the first bad seq), `head`,
 * `snapshot` or `fork-origin` (with the seq it stands for).
 */

export type LedgerVerifyResult =
  | { ok: true; seq: number; hash: string }
  | {
      ok: false;
      code: 'ErrTamperedLedger';
      firstBadSeq: number;
      object: TamperedObject;
      /** The seq the bad object stands for (0: a fork's origin). */
      seq: number;
      /** Diagnostics for logs; may name storage keys, so not for API answers. */
      reason: string;
    };

export interface VerifierOptions {
  objects: ObjectStore;
  records: RecordStore;
  reader: Reader;
  /** Snapshot objects fetched at once. Default 4. */
  concurrency?: number;
}

/** A snapshot of either format, fully read: v2 reads and verifies every chunk it names. */
const checkAnySnapshot = async (
  snapshots: ChunkSnapshots,
  body: Uint8Array,
  expect: SnapshotExpectation,
): Promise<void> => {
  const decoded = decodeAnySnapshot(body, expect);
  if ('root' in decoded) {
    await snapshots.readRoot(expect.tenant, '\u0000verify', decoded.root, expect);
  }
};

const badSnapshot = (seq: number, why: string, cause?: unknown) =>
  new TamperedObjectError(
    'snapshot',
    { firstBadSeq: Math.max(seq, 1), seq },
    `base snapshot at seq ${seq}: ${why}`,
    cause === undefined ? undefined : { cause },
  );

/** The index of the first element >= value in a sorted array. */
const lowerBound = (sorted: number[], value: number): number => {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

export class Verifier {
  readonly #o: Required<VerifierOptions>;

  constructor(options: VerifierOptions) {
    this.#o = { ...options, concurrency: options.concurrency ?? 4 };
  }

  /** A chunk reader with an empty cache: verification reads what storage holds now. */
  #snapshots(): ChunkSnapshots {
    const { objects, records } = this.#o;
    const chunks = new ChunkStore({ objects, records, clock: { now: () => Date.now() } });
    return new ChunkSnapshots(chunks, objects, records);
  }

  async verify(tenant: string, stream: string): Promise<LedgerVerifyResult> {
    try {
      return await this.#verify(tenant, stream);
    } catch (err) {
      if (!(err instanceof TamperedLedgerError)) throw err;
      const { object, seq } = objectOf(err);
      const { firstBadSeq, message: reason } = err;
      return { ok: false, code: 'ErrTamperedLedger', firstBadSeq, object, seq, reason };
    }
  }

  async #verify(tenant: string, stream: string): Promise<LedgerVerifyResult> {
    const snapshots = await this.#snapshotRecords(tenant, stream);
    const wanted = [...new Set([1, ...snapshots.map((s) => s.seq)])].sort((a, b) => a - b);
    const isWanted = new Set(wanted);
    const hashes = new Map<number, string>();
    let first: SealedEvent | undefined;
    const decode = (entry: SegmentIndexRecord): DecodeOptions => {
      // Seqs inside the segment whose hash (or, for seq 1, whose event) only decoding gives;
      // a segment's last hash is its index record's.
      let i = lowerBound(wanted, entry.firstSeq);
      const lo = wanted[i];
      let hi: number | undefined;
      for (; i < wanted.length && (wanted[i] as number) <= entry.lastSeq; i++) {
        const seq = wanted[i] as number;
        if (seq < entry.lastSeq || seq === 1) hi = seq;
      }
      return lo === undefined || hi === undefined
        ? { verifyOnly: true }
        : { only: { from: lo, to: hi } };
    };
    const { head, start, end } = await this.#o.reader.verifyChain(tenant, stream, {
      decode,
      visit: (segment, entry) => {
        if (isWanted.has(entry.lastSeq)) hashes.set(entry.lastSeq, entry.lastHash);
        for (const event of segment.events) {
          if (isWanted.has(event.seq)) hashes.set(event.seq, event.hash);
          if (event.seq === 1) first = event;
        }
      },
    });
    hashes.set(start.seq, start.hash);

    const floor = head.prunedSeq ?? 0;
    const version = digestVersionOf(head);
    const judged = snapshots.filter((s) => s.seq >= floor && s.seq <= head.seq);
    const failures = await mapLimit(judged, this.#o.concurrency, (record) =>
      this.#checkSnapshot(tenant, stream, record, hashes.get(record.seq), version).then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    // The lowest bad seq, whichever fetch failed first.
    const failure = failures.find((f) => f !== undefined);
    if (failure !== undefined) throw failure;
    if (floor === 0 && first?.type === FORK_EVENT)
      await this.#checkForkOrigin(tenant, stream, first, version);
    return { ok: true, ...end };
  }

  /** Every snapshot index record of the stream, lowest seq first. */
  async #snapshotRecords(tenant: string, stream: string): Promise<SnapshotIndexRecord[]> {
    const out: SnapshotIndexRecord[] = [];
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), {
        skPrefix: SNAPSHOT_INDEX_PREFIX,
        after,
      });
      for (const item of page.items) out.push(toSnapshotIndex(item));
      after = page.next;
    } while (after !== undefined);
    return out.reverse(); // keys hold INV - seq: stored highest seq first
  }

  async #checkSnapshot(
    tenant: string,
    stream: string,
    record: SnapshotIndexRecord,
    chainHash: string | undefined,
    digestVersion: DigestVersion,
  ): Promise<void> {
    if (chainHash === undefined) throw badSnapshot(record.seq, 'the chain does not hold its seq');
    if (record.hash !== chainHash) throw badSnapshot(record.seq, 'names another chain hash');
    const stored = await this.#o.objects.get(record.objectKey);
    if (!stored) {
      const still = await this.#o.records.get(snapshotIndexKey(tenant, stream, record.seq));
      if (!still) return; // pruned since it was listed
      throw badSnapshot(record.seq, 'its object is missing');
    }
    try {
      await checkAnySnapshot(this.#snapshots(), stored.body, {
        tenant,
        stream,
        ...record,
        hash: chainHash,
        digestVersion,
      });
    } catch (err) {
      if (err instanceof TamperedLedgerError) throw badSnapshot(record.seq, err.message, err);
      throw err;
    }
  }

  async #checkForkOrigin(
    tenant: string,
    stream: string,
    first: SealedEvent,
    digestVersion: DigestVersion,
  ): Promise<void> {
    const bad = (why: string, cause?: unknown) =>
      new TamperedObjectError(
        'fork-origin',
        { firstBadSeq: 1, seq: 0 },
        `fork origin: ${why}`,
        cause === undefined ? undefined : { cause },
      );
    const payload = JSON.parse(payloadJsonOf(first)) as Partial<ForkPayload>;
    if (payload.root !== undefined && typeof payload.stateDigest === 'string') {
      try {
        const expect = { seq: 0, stateDigest: payload.stateDigest, digestVersion };
        await this.#snapshots().readRoot(tenant, '\u0000verify', payload.root, expect);
        return;
      } catch (err) {
        if (err instanceof TamperedLedgerError) throw bad(err.message, err);
        throw err;
      }
    }
    if (typeof payload.snapshotKey !== 'string' || typeof payload.stateDigest !== 'string') {
      throw bad('the fork event names no origin snapshot');
    }
    const stored = await this.#o.objects.get(payload.snapshotKey);
    if (!stored) throw bad('its snapshot is missing');
    try {
      await checkAnySnapshot(this.#snapshots(), stored.body, {
        tenant,
        stream,
        seq: 0,
        stateDigest: payload.stateDigest,
        hash: genesisHash(tenant, stream),
        digestVersion,
      });
    } catch (err) {
      if (err instanceof TamperedLedgerError) throw bad(err.message, err);
      throw err;
    }
  }
}
