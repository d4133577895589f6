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
 * | idempotency       | t#{tenant}#idem#{key}     | idem                |
 * | API key           | key#{keyId}               | key                 |
 * | bootstrap marker  | bootstrap                 | bootstrap           |
 */

export const pad16 = (n: number): string => String(n).padStart(16, '0');

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
}

export const idempotencyKey = (tenant: string, key: string): ItemKey => ({
  pk: `t#${tenant}#idem#${key}`,
  sk: 'idem',
});

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
}

export interface IdempotencyRecord {
  stream: string;
  digest: string;
  status: number;
  body: AppendResponse;
  createdAt: number;
}

export interface AppendResponse {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
  /** State digest after the batch (answers for checkpoint replays). */
  stateDigest?: string;
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

export const toHead = (item: Item): HeadRecord => ({
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
  firstSeq: num(item, 'firstSeq'),
  lastSeq: num(item, 'lastSeq'),
  prevHash: str(item, 'prevHash'),
  lastHash: str(item, 'lastHash'),
  objectKey: str(item, 'objectKey'),
});

export const toSnapshotIndex = (item: Item): SnapshotIndexRecord => ({
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
  createdAt: num(item, 'createdAt'),
});
