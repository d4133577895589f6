import { sha256 } from '../domain/hashing.js';
import type { SignedTreeHead } from '../domain/signed-head.js';
import type { Item, ItemKey } from '../ports/record-store.js';

/**
 * Where each record lives in the RecordStore (one DynamoDB table, keys pk/sk). Stream and
 * tenant ids cannot contain '#', so these keys never collide.
 *
 * | record            | pk                        | sk                  |
 * | ----------------- | ------------------------- | ------------------- |
 * | chain head        | t#{tenant}#s#{stream}     | head                |
 * | segment index     | t#{tenant}#s#{stream}     | seg#{lastSeq, 16d}  |
 * | snapshot index    | t#{tenant}#s#{stream}     | snap#{INV - seq}    |
 * | idempotency       | t#{tenant}#s#{stream}     | ikey#{incarnation}#{key} |
 * | (before: legacy)  | t#{tenant}#idem#{key}     | idem (read only: idempotencyRecordKey) |
 * | service idem. key | t#{tenant}#s#{stream}     | idem#{key}          |
 * | writer lease      | t#{tenant}#s#{stream}     | writer-lease        |
 * | refused batch     | t#{tenant}#s#{stream}     | refused#{seq, 16d}  |
 * | API key           | key#{keyId}               | key                 |
 * | bootstrap marker  | bootstrap                 | bootstrap           |
 * | signing keys used | signing-keys              | signing-keys        |
 * | compactor lease   | t#{tenant}#s#{stream}     | compactor-lease     |
 * | base due          | t#{tenant}#s#{stream}     | basedue#{seq, 16d}  |
 * | garbage (batch)   | t#{tenant}#s#{stream}     | gc#{deleteAfter}#{tag} |
 * | orphan candidate  | t#{tenant}#s#{stream}     | orphan#{objectKey}  |
 * | orphan sweep due  | t#{tenant}#s#{stream}     | sweep               |
 * | work marker       | compact#{shard}           | {tenant}#{stream}   |
 * | scheduled visit   | due#{shard}               | {dueAt, 16d}#{tenant}#{stream} |
 *
 * Compaction records (see compactor.ts): a work marker is put in the same transaction as an
 * append that makes a stream worth compacting (one per stream, overwritten); scheduled visits
 * are time-ordered (garbage past its grace, expiry, pruning horizon, unfinished work), so the
 * compactor reads only the due part of a few partitions and never scans streams.
 */

export const pad16 = (n: number): string => String(n).padStart(16, '0');

/** The public keys that have signed this deployment's heads (signing-keys.ts). */
export const SIGNING_KEYS_KEY: ItemKey = { pk: 'signing-keys', sk: 'signing-keys' };

export const streamPk = (tenant: string, stream: string): string => `t#${tenant}#s#${stream}`;

export const headKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: 'head',
});

export const SEGMENT_INDEX_PREFIX = 'seg#';

export const segmentIndexKey = (tenant: string, stream: string, lastSeq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${SEGMENT_INDEX_PREFIX}${pad16(lastSeq)}`,
});

/**
 * Snapshot index keys hold INV - seq, so that an ascending query starting after the key of
 * seq N + 1 meets the latest snapshot at or before N first (no descending query needed).
 */
export const SNAPSHOT_INDEX_PREFIX = 'snap#';
const INV = Number.MAX_SAFE_INTEGER;

export const snapshotIndexSk = (seq: number): string =>
  `${SNAPSHOT_INDEX_PREFIX}${pad16(INV - seq)}`;

export const snapshotIndexKey = (tenant: string, stream: string, seq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: snapshotIndexSk(seq),
});

export interface SnapshotIndexRecord {
  seq: number;
  hash: string;
  stateDigest: string;
  objectKey: string;
  /** Delta count of the stream at `seq` (absent on records written before it was kept). */
  deltas?: number;
  /**
   * The last state-setting event (delta or fork) at or before `seq`, whose recorded digest
   * binds the base to the chain (0: none, the empty state). Absent on records written before
   * it was kept (docs/ledger-format.md, "Binding rule").
   */
  stateSeq?: number;
}

/**
 * Where a client's idempotency record was kept before incarnations (tenant-wide, 24 h): only
 * read, as a fallback, in the 24 h after a stream first got an incarnation (append.ts
 * storedResult), and by the effect events' lookup of events written before service keys.
 */
export const legacyIdempotencyKey = (tenant: string, key: string): ItemKey => ({
  pk: `t#${tenant}#idem#${key}`,
  sk: 'idem',
});

export const CLIENT_IDEMPOTENCY_PREFIX = 'ikey#';

/**
 * A client's idempotency record: in the stream's partition, under the incarnation (one life
 * of the stream, HeadRecord.incarnation) it was written in. A stream deleted and created
 * again has another incarnation, so a key of its past life is not found in its new one, and
 * the compactor's deletion of the stream's partition deletes the records with it.
 */
export const clientIdempotencyKey = (
  tenant: string,
  stream: string,
  incarnation: string,
  key: string,
): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${CLIENT_IDEMPOTENCY_PREFIX}${incarnation}#${key}`,
});

/**
 * Idempotency keys the service derives itself (an effect's ledger event) start with this
 * mark. A client's Idempotency-Key is printable ASCII (idempotency-key.ts), so it never does:
 * the service's keys live in a namespace no client key reaches. Their records are kept in the
 * stream's own partition (scoped by stream, deleted with it) and never expire, so the request
 * they dedupe is written once however late it is repeated. Segment headers carry the marked
 * key, so a writer rolling such a segment forward stores its record in the same place.
 */
export const SERVICE_KEY_MARK = '\u0000';

export const serviceIdempotencyKey = (name: string): string => `${SERVICE_KEY_MARK}${name}`;

export const isServiceKey = (key: string): boolean => key.startsWith(SERVICE_KEY_MARK);

/** Where the idempotency record of `key` (a client's or the service's) lives. */
export const idempotencyRecordKey = (
  tenant: string,
  stream: string,
  incarnation: string,
  key: string,
): ItemKey =>
  isServiceKey(key)
    ? { pk: streamPk(tenant, stream), sk: `idem#${key.slice(SERVICE_KEY_MARK.length)}` }
    : clientIdempotencyKey(tenant, stream, incarnation, key);

/** The chain head: the only mutable pointer of a stream, moved by conditional writes. */
export interface HeadRecord {
  seq: number;
  hash: string;
  epoch: number;
  /** Digest of the agent state after event `seq`. */
  stateDigest: string;
  /** Number of delta checkpoints in the stream (snapshot cadence). */
  deltas: number;
  /** Seq of the last event that set the state (delta or fork); 0 before any. */
  stateSeq: number;
  createdAt: number;
  updatedAt: number;
  /** Segments committed since the stream's last compaction marker. */
  pending?: number;
  /** Retention: the stream is deleted once this time (ms) has passed. */
  expiresAt?: number;
  /** Retention: events older than this (ms) are pruned by the compactor. */
  pruneAfterMs?: number;
  /** Events up to here were pruned; verification starts from (prunedSeq, prunedHash). */
  prunedSeq?: number;
  prunedHash?: string;
  /** `deleting`: expired; reads answer 404 and appends are refused until it is gone. */
  status?: 'deleting';
  deletingAt?: number;
  /** Deltas between the state at `stateSeq` and its base along baseSeq links (records-v2). */
  stateDepth?: number;
  /** Labelled checkpoints in the stream (records-v2). */
  labels?: number;
  /** The Merkle tree (docs/records-v2.md, docs/proofs.md): absent on a stream not backfilled. */
  treeBase?: number;
  treeSize?: number;
  /** Right edge of the tree, 64-hex, largest subtree first. */
  frontier?: string[];
  /** The signed head at treeSize (the last receipt), which the witness publishes. */
  treeHead?: SignedTreeHead;
  /** The stream moved since the witness last published it (its marker is stored). */
  witPending?: boolean;
  /** How the stream's state digests are computed (records-v2); absent: 1. */
  digestVersion?: 2;
  /**
   * This life of the stream: a random id (the id port) given when the stream is created, so
   * a stream deleted and created again is told apart from its past life (idempotency records,
   * effect records, Hefesto-Incarnation). Absent on a head written before incarnations: its
   * next commit gives it one, and `legacyIdemUntil`.
   */
  incarnation?: string;
  /** Until then (ms), retries are also looked up in the legacy records (legacyIdempotencyKey). */
  legacyIdemUntil?: number;
}

/**
 * One committed segment: written in the same transaction that moves the head over it, so
 * every segment can be verified on its own against a trusted (firstSeq, prevHash, lastHash).
 */
export interface SegmentIndexRecord {
  firstSeq: number;
  lastSeq: number;
  prevHash: string;
  lastHash: string;
  objectKey: string;
  /** Object size in bytes, and the latest createdAt of its events' batches (compaction). */
  size?: number;
  createdAt?: number;
}

export interface IdempotencyRecord {
  stream: string;
  digest: string;
  status: number;
  /** The response, without its receipt when `receipt` holds it (idem-receipt.ts). */
  body: AppendResponse;
  /** The receipt's signed fields, unsigned (idem-receipt.ts); absent on older records. */
  receipt?: unknown;
  createdAt: number;
}

export interface AppendResponse {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
  /** State digest after the batch (answers for checkpoint replays). */
  stateDigest?: string;
  /** The receipt: the signed tree head after the batch (absent: no tree yet, or no signer). */
  treeHead?: SignedTreeHead;
  /** The stream's incarnation the batch was committed in (absent on older records). */
  incarnation?: string;
}

const num = (item: Item, attr: string): number => {
  const v = item[attr];
  if (typeof v !== 'number') throw new Error(`record ${item.pk}/${item.sk} lacks number ${attr}`);
  return v;
};

const str = (item: Item, attr: string): string => {
  const v = item[attr];
  if (typeof v !== 'string') throw new Error(`record ${item.pk}/${item.sk} lacks string ${attr}`);
  return v;
};

const optNum = (item: Item, attr: string): number | undefined =>
  typeof item[attr] === 'number' ? (item[attr] as number) : undefined;

const optional = <T extends object>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;

export const toHead = (item: Item): HeadRecord => ({
  ...optional({
    pending: optNum(item, 'pending'),
    expiresAt: optNum(item, 'expiresAt'),
    pruneAfterMs: optNum(item, 'pruneAfterMs'),
    prunedSeq: optNum(item, 'prunedSeq'),
    prunedHash: typeof item.prunedHash === 'string' ? item.prunedHash : undefined,
    status: item.status === 'deleting' ? ('deleting' as const) : undefined,
    deletingAt: optNum(item, 'deletingAt'),
    stateDepth: optNum(item, 'stateDepth'),
    labels: optNum(item, 'labels'),
    treeBase: optNum(item, 'treeBase'),
    treeSize: optNum(item, 'treeSize'),
    frontier: Array.isArray(item.frontier) ? (item.frontier as string[]) : undefined,
    treeHead:
      typeof item.treeHead === 'object' && item.treeHead !== null
        ? (item.treeHead as unknown as SignedTreeHead)
        : undefined,
    witPending: item.witPending === true ? true : undefined,
    digestVersion: item.digestVersion === 2 ? (2 as const) : undefined,
    incarnation: typeof item.incarnation === 'string' ? item.incarnation : undefined,
    legacyIdemUntil: optNum(item, 'legacyIdemUntil'),
  }),
  seq: num(item, 'seq'),
  hash: str(item, 'hash'),
  epoch: num(item, 'epoch'),
  stateDigest: str(item, 'stateDigest'),
  deltas: num(item, 'deltas'),
  stateSeq: num(item, 'stateSeq'),
  createdAt: num(item, 'createdAt'),
  updatedAt: num(item, 'updatedAt'),
});

export const toSegmentIndex = (item: Item): SegmentIndexRecord => ({
  ...optional({ size: optNum(item, 'size'), createdAt: optNum(item, 'createdAt') }),
  firstSeq: num(item, 'firstSeq'),
  lastSeq: num(item, 'lastSeq'),
  prevHash: str(item, 'prevHash'),
  lastHash: str(item, 'lastHash'),
  objectKey: str(item, 'objectKey'),
});

export const toSnapshotIndex = (item: Item): SnapshotIndexRecord => ({
  ...optional({ deltas: optNum(item, 'deltas'), stateSeq: optNum(item, 'stateSeq') }),
  seq: num(item, 'seq'),
  hash: str(item, 'hash'),
  stateDigest: str(item, 'stateDigest'),
  objectKey: str(item, 'objectKey'),
});

export const toIdempotency = (item: Item): IdempotencyRecord => ({
  stream: str(item, 'stream'),
  digest: str(item, 'digest'),
  status: num(item, 'status'),
  body: item.body as unknown as AppendResponse,
  ...(item.receipt === undefined ? {} : { receipt: item.receipt }),
  createdAt: num(item, 'createdAt'),
});

/** Compaction work is spread over a few partitions, chosen by a hash of the stream. */
export const WORK_SHARDS = 8;

export const shardOf = (tenant: string, stream: string): number =>
  (sha256(Buffer.from(`${tenant}#${stream}`, 'utf8'))[0] ?? 0) % WORK_SHARDS;

export const markerPk = (shard: number): string => `compact#${shard}`;

/** The stream's work marker: one per stream, put by the append that makes work due. */
export const markerKey = (tenant: string, stream: string): ItemKey => ({
  pk: markerPk(shardOf(tenant, stream)),
  sk: `${tenant}#${stream}`,
});

export const duePk = (shard: number): string => `due#${shard}`;

/** A visit of the stream scheduled at `at` (ms): sorted by time within its partition. */
export const dueKey = (tenant: string, stream: string, at: number): ItemKey => ({
  pk: duePk(shardOf(tenant, stream)),
  sk: `${pad16(at)}#${tenant}#${stream}`,
});

/** The sk bound of the due entries at or before `now` (ids never contain '~'). */
export const dueUntilSk = (now: number): string => `${pad16(now)}#~`;

export const leaseKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: 'compactor-lease',
});

export const BASE_DUE_PREFIX = 'basedue#';

/** A base snapshot that is due at `seq` (put by the commit of the K-th delta). */
export const baseDueKey = (tenant: string, stream: string, seq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${BASE_DUE_PREFIX}${pad16(seq)}`,
});

export const GARBAGE_PREFIX = 'gc#';

/** Superseded objects (attr `objects`), deleted once `deleteAfter` (in the sk) has passed. */
export const garbageKey = (
  tenant: string,
  stream: string,
  deleteAfter: number,
  tag: string,
): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${GARBAGE_PREFIX}${pad16(deleteAfter)}#${tag}`,
});

export const ORPHAN_PREFIX = 'orphan#';

/** An object under seg/ that no index record names; deleted after its grace if still so. */
export const orphanKey = (tenant: string, stream: string, objectKey: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${ORPHAN_PREFIX}${objectKey}`,
});

/** An orphan sweep is due at `dueAt` (put by every merge publish). */
export const sweepKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: 'sweep',
});

export interface WorkItem {
  key: ItemKey;
  tenant: string;
  stream: string;
  /** Markers: the head seq when it was put (its removal is conditional on it). */
  seq?: number;
}

export const toWorkItem = (item: Item): WorkItem => ({
  key: { pk: item.pk, sk: item.sk },
  tenant: str(item, 'tenant'),
  stream: str(item, 'stream'),
  ...optional({ seq: optNum(item, 'seq') }),
});
