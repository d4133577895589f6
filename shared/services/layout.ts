import type { Item, ItemKey } from '../ports/record-store.js';

/**
 * Where each record lives in the RecordStore (one DynamoDB table, keys pk/sk). Stream and
 * tenant ids cannot contain '#', so these keys never collide.
 *
 * | record            | pk                        | sk                  |
 * | ----------------- | ------------------------- | ------------------- |
 * | chain head        | t#{tenant}#s#{stream}     | head                |
 * | segment index     | t#{tenant}#s#{stream}     | seg#{lastSeq, 16d}  |
 * | idempotency       | t#{tenant}#idem#{key}     | idem                |
 * | API key           | key#{keyId}               | key                 |
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

export const idempotencyKey = (tenant: string, key: string): ItemKey => ({
  pk: `t#${tenant}#idem#${key}`,
  sk: 'idem',
});

/** The chain head: the only mutable pointer of a stream, moved by conditional writes. */
export interface HeadRecord {
  seq: number;
  hash: string;
  epoch: number;
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

export const toIdempotency = (item: Item): IdempotencyRecord => ({
  stream: str(item, 'stream'),
  digest: str(item, 'digest'),
  status: num(item, 'status'),
  body: item.body as unknown as AppendResponse,
  createdAt: num(item, 'createdAt'),
});
