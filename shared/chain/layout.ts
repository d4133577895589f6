import type { SignedTreeHead } from '../domain/signed-head.js';
import type { Item, ItemKey } from '../ports/record-store.js';
import { segmentIndexSk, snapshotIndexSk } from './storage-keys.js';
import { TamperedObjectError } from './tampered.js';

/**
 * The records of a stream's chain as stored, and their parsers. Where each record lives is
 * in storage-keys.ts (every storage key of every kind); what each kind is and what detects
 * its tampering, in storage-kinds.ts.
 */

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
  /**
   * When the compactor's visit for the state's expiring entries is scheduled (a delta's
   * `expiry` hint, commit-extras.ts): a scheduling aid only, never what decides a deletion.
   */
  expiryDueAt?: number;
  /** Retention: events older than this (ms) are pruned by the compactor. */
  pruneAfterMs?: number;
  /** Events up to here were pruned; verification starts from (prunedSeq, prunedHash). */
  prunedSeq?: number;
  prunedHash?: string;
  /**
   * The seq of the last session-history clear (a delta with `clear: true`, shared/history):
   * the chain is to be cut there (prunedSeq = clearedSeq), by the clear's own request or, if
   * it died first, by the compactor's visit that the clear's commit scheduled.
   */
  clearedSeq?: number;
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
  /**
   * The stream key (docs/privacy.md): put when the stream is created with a keyring; every
   * append seals under it, and one without the key is refused. Absent: written in the clear.
   */
  keyId?: string;
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
    expiryDueAt: optNum(item, 'expiryDueAt'),
    prunedSeq: optNum(item, 'prunedSeq'),
    prunedHash: typeof item.prunedHash === 'string' ? item.prunedHash : undefined,
    clearedSeq: optNum(item, 'clearedSeq'),
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
    keyId: typeof item.keyId === 'string' ? item.keyId : undefined,
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

/**
 * An index record names its seq twice: in its key (what queries find it by) and in its body
 * (what readers use). A record copied under another seq's key is tampering, refused here for
 * every reader (the tamper matrix, docs/ledger-format.md).
 */
const keyed = <R>(item: Item, sk: string, object: 'segment' | 'snapshot', seq: number, r: R): R => {
  if (item.sk !== sk) {
    throw new TamperedObjectError(
      object,
      { firstBadSeq: Math.max(seq, 1), seq },
      `the ${object} index record at ${item.sk} names seq ${seq}`,
    );
  }
  return r;
};

export const toSegmentIndex = (item: Item): SegmentIndexRecord => {
  const lastSeq = num(item, 'lastSeq');
  return keyed(item, segmentIndexSk(lastSeq), 'segment', lastSeq, {
    ...optional({ size: optNum(item, 'size'), createdAt: optNum(item, 'createdAt') }),
    firstSeq: num(item, 'firstSeq'),
    lastSeq,
    prevHash: str(item, 'prevHash'),
    lastHash: str(item, 'lastHash'),
    objectKey: str(item, 'objectKey'),
  });
};

export const toSnapshotIndex = (item: Item): SnapshotIndexRecord => {
  const seq = num(item, 'seq');
  return keyed(item, snapshotIndexSk(seq), 'snapshot', seq, {
    ...optional({ deltas: optNum(item, 'deltas'), stateSeq: optNum(item, 'stateSeq') }),
    seq,
    hash: str(item, 'hash'),
    stateDigest: str(item, 'stateDigest'),
    objectKey: str(item, 'objectKey'),
  });
};

export const toIdempotency = (item: Item): IdempotencyRecord => ({
  stream: str(item, 'stream'),
  digest: str(item, 'digest'),
  status: num(item, 'status'),
  body: item.body as unknown as AppendResponse,
  ...(item.receipt === undefined ? {} : { receipt: item.receipt }),
  createdAt: num(item, 'createdAt'),
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
