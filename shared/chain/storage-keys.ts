import { createHash } from 'node:crypto';
import { sha256 } from '../domain/hashing.js';
import { type TileId, tilePath } from '../domain/merkle/tiles.js';
import type { ItemKey } from '../ports/record-store.js';

/**
 * Every storage key of every record and object kind: the only place a key is formatted. What
 * each kind is, how it is told apart and what detects its tampering is in storage-kinds.ts,
 * built on the prefixes here (docs/ledger-format.md, "Storage kinds and the tamper matrix").
 *
 * RecordStore (one DynamoDB table, keys pk/sk). Stream and tenant ids cannot contain '#' or
 * '/', so these keys never collide:
 *
 * | record               | pk                        | sk                                  |
 * | -------------------- | ------------------------- | ----------------------------------- |
 * | chain head           | t#{tenant}#s#{stream}     | head                                |
 * | segment index        | t#{tenant}#s#{stream}     | seg#{lastSeq, 16d}                  |
 * | snapshot index       | t#{tenant}#s#{stream}     | snap#{INV - seq}                    |
 * | checkpoint label     | t#{tenant}#s#{stream}     | label#{label}                       |
 * | checkpoint list      | t#{tenant}#s#{stream}     | ckpt#{INV - seq}                    |
 * | pending write        | t#{tenant}#s#{stream}     | pw#{label}#{task}#{idx}             |
 * | effect               | t#{tenant}#s#{stream}     | effect#{effectKey}                  |
 * | idempotency          | t#{tenant}#s#{stream}     | ikey#{incarnation}#{key}            |
 * | (before: legacy)     | t#{tenant}#idem#{key}     | idem (read only)                    |
 * | service idem. key    | t#{tenant}#s#{stream}     | idem#{key}                          |
 * | writer lease         | t#{tenant}#s#{stream}     | writer-lease                        |
 * | stream key           | t#{tenant}#s#{stream}     | key                                 |
 * | refused batch        | t#{tenant}#s#{stream}     | refused#{seq, 16d}                  |
 * | tiles stored         | t#{tenant}#s#{stream}     | tiles                               |
 * | compactor lease      | t#{tenant}#s#{stream}     | compactor-lease                     |
 * | base due             | t#{tenant}#s#{stream}     | basedue#{seq, 16d}                  |
 * | garbage (batch)      | t#{tenant}#s#{stream}     | gc#{deleteAfter}#{tag}              |
 * | orphan candidate     | t#{tenant}#s#{stream}     | orphan#{objectKey}                  |
 * | orphan sweep due     | t#{tenant}#s#{stream}     | sweep                               |
 * | stream index         | t#{tenant}#streams        | {stream}                            |
 * | chunk reference      | t#{tenant}#chunkrefs      | {stream}#{kind}#{id}                |
 * | chunk GC marker      | t#{tenant}#chunkgc        | marker                              |
 * | chunk GC due         | chunkgc-due               | {tenant}                            |
 * | work marker          | compact#{shard}           | {tenant}#{stream}                   |
 * | scheduled visit      | due#{shard}               | {dueAt, 16d}#{tenant}#{stream}      |
 * | witness marker       | wit#{shard}               | {tenant}#{stream}                   |
 * | API key              | key#{keyId}               | key                                 |
 * | bootstrap marker     | bootstrap                 | bootstrap                           |
 * | signing keys used    | signing-keys              | signing-keys                        |
 *
 * ObjectStore (one bucket): `t/{tenant}/s/{stream}/seg/{firstSeq, 16d}[-{lastSeq, 16d}]`
 * (segments), `.../snap/{seq, 16d}-{stateDigest}` (snapshots, seq 0: a fork's origin),
 * `.../tile/...` (Merkle tiles, tlog-tiles paths), `t/{tenant}/chunks/{hash}` (chunks),
 * `t/{tenant}/chunkgc/{gen, 16d}-{at, 16d}` (a chunk GC's condemned list). WitnessStore:
 * `w/{tenant}/{publishedAt, 16d}-{runId}.json`.
 *
 * Compaction records (see compactor.ts): a work marker is put in the same transaction as an
 * append that makes a stream worth compacting (one per stream, overwritten); scheduled visits
 * are time-ordered (garbage past its grace, expiry, pruning horizon, unfinished work), so the
 * compactor reads only the due part of a few partitions and never scans streams.
 */

export const pad16 = (n: number): string => String(n).padStart(16, '0');

/** Keys holding INV - seq sort newest first in an ascending query. */
const INV = Number.MAX_SAFE_INTEGER;

// ---- a stream's partition ----

export const streamPk = (tenant: string, stream: string): string => `t#${tenant}#s#${stream}`;

export const HEAD_SK = 'head';

/** The stream's key record: its wrapped secret (docs/privacy.md, Decision 3). */
export const STREAM_KEY_SK = 'key';

export const streamKeyKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: STREAM_KEY_SK,
});

export const headKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: HEAD_SK,
});

export const SEGMENT_INDEX_PREFIX = 'seg#';

export const segmentIndexSk = (lastSeq: number): string =>
  `${SEGMENT_INDEX_PREFIX}${pad16(lastSeq)}`;

export const segmentIndexKey = (tenant: string, stream: string, lastSeq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: segmentIndexSk(lastSeq),
});

/**
 * Snapshot index keys hold INV - seq, so that an ascending query starting after the key of
 * seq N + 1 meets the latest snapshot at or before N first (no descending query needed).
 */
export const SNAPSHOT_INDEX_PREFIX = 'snap#';

export const snapshotIndexSk = (seq: number): string =>
  `${SNAPSHOT_INDEX_PREFIX}${pad16(INV - seq)}`;

export const snapshotIndexKey = (tenant: string, stream: string, seq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: snapshotIndexSk(seq),
});

/** Checkpoint labels and the checkpoint list (labels.ts). */
export const LABEL_PREFIX = 'label#';
export const CKPT_PREFIX = 'ckpt#';

export const labelKey = (tenant: string, stream: string, label: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${LABEL_PREFIX}${label}`,
});

export const ckptSk = (seq: number): string => `${CKPT_PREFIX}${pad16(INV - seq)}`;

/** The label a label record's sort key names. */
export const labelOfSk = (sk: string): string => sk.slice(LABEL_PREFIX.length);

/** Pending writes of a label (pending-writes.ts). */
export const PENDING_WRITE_PREFIX = 'pw#';
const IDX_OFFSET = 2 ** 31;

export const writesPrefix = (label: string) => `${PENDING_WRITE_PREFIX}${label}#`;

/** The key of a write: `pw#{label}#{task}#{pad10(idx + 2^31)}` (pending-writes.ts). */
export const pendingWriteSk = (label: string, taskPath: string, taskId: string, idx: number) => {
  const task = createHash('sha256').update(`${taskPath}\u0000${taskId}`, 'utf8').digest();
  const idxKey = String(idx + IDX_OFFSET).padStart(10, '0');
  return `${writesPrefix(label)}${task.toString('base64url').slice(0, 16)}#${idxKey}`;
};

/** The label a pending write's sort key is under (labels hold no `#`). */
export const labelOfWriteSk = (sk: string): string =>
  sk.slice(PENDING_WRITE_PREFIX.length, sk.indexOf('#', PENDING_WRITE_PREFIX.length));

export const EFFECT_PREFIX = 'effect#';

export const effectRecordKey = (tenant: string, stream: string, effectKey: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${EFFECT_PREFIX}${effectKey}`,
});

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
export const SERVICE_IDEMPOTENCY_PREFIX = 'idem#';

export const serviceIdempotencyKey = (name: string): string => `${SERVICE_KEY_MARK}${name}`;

/** The service's key of a finished effect's ledger event (effect-events.ts). */
export const effectEventIdempotencyKey = (status: string, effectKey: string): string =>
  serviceIdempotencyKey(`effect#${status}#${effectKey}`);

/**
 * The service's key of a session history operation (shared/history/): the operation id's
 * SHA-256 under the life of the history it applies to (the count of its clears), so an
 * operation id is the session's for as long as the stream lives, and a cleared history
 * forgets its operation ids as the SDK's MemorySession does.
 */
export const historyOperationKey = (life: number, operationIdHash: string): string =>
  serviceIdempotencyKey(`hist#${life}#${operationIdHash}`);

export const isServiceKey = (key: string): boolean => key.startsWith(SERVICE_KEY_MARK);

/** Where the idempotency record of `key` (a client's or the service's) lives. */
export const idempotencyRecordKey = (
  tenant: string,
  stream: string,
  incarnation: string,
  key: string,
): ItemKey =>
  isServiceKey(key)
    ? {
        pk: streamPk(tenant, stream),
        sk: `${SERVICE_IDEMPOTENCY_PREFIX}${key.slice(SERVICE_KEY_MARK.length)}`,
      }
    : clientIdempotencyKey(tenant, stream, incarnation, key);

export const WRITER_LEASE_SK = 'writer-lease';

/** The stream's writer lease (leases.ts). */
export const writerLeaseKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: WRITER_LEASE_SK,
});

export const REFUSED_PREFIX = 'refused#';

/** A fenced writer's segment at `firstSeq`, refused (lease-orphans.ts). */
export const refusedKey = (tenant: string, stream: string, firstSeq: number): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: `${REFUSED_PREFIX}${pad16(firstSeq)}`,
});

export const TILES_SK = 'tiles';

/** Record of the stream's tiles: all tiles of a tree of `size` leaves are stored. */
export const tilesKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: TILES_SK,
});

export const COMPACTOR_LEASE_SK = 'compactor-lease';

export const compactorLeaseKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: COMPACTOR_LEASE_SK,
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

export const SWEEP_SK = 'sweep';

/** An orphan sweep is due at `dueAt` (put by every merge publish). */
export const sweepKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamPk(tenant, stream),
  sk: SWEEP_SK,
});

// ---- a tenant's partitions ----

/** The tenant's stream index (stream-list.ts). */
export const streamIndexPk = (tenant: string): string => `t#${tenant}#streams`;

export const streamIndexKey = (tenant: string, stream: string): ItemKey => ({
  pk: streamIndexPk(tenant),
  sk: stream,
});

/** What a chunk reference keeps reachable (chunk-store.ts). */
export type RefKind = 'base' | 'fork' | 'value';

export const chunkRefsPk = (tenant: string): string => `t#${tenant}#chunkrefs`;

export const refSk = (stream: string, kind: RefKind, id: number | string): string =>
  `${stream}#${kind}#${typeof id === 'number' ? pad16(id) : id}`;

export const chunkGcKey = (tenant: string): ItemKey => ({
  pk: `t#${tenant}#chunkgc`,
  sk: 'marker',
});

export const CHUNK_GC_DUE_PK = 'chunkgc-due';

/** A GC visit of the tenant's chunks is due (its time in attribute `dueAt`). */
export const chunkGcDueKey = (tenant: string): ItemKey => ({ pk: CHUNK_GC_DUE_PK, sk: tenant });

// ---- operator-wide partitions ----

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

export const WITNESS_PREFIX = 'wit#';

export const witnessPk = (shard: number): string => `${WITNESS_PREFIX}${shard}`;

/** The stream's witness marker: it moved since the witness last published it. */
export const witnessKey = (tenant: string, stream: string): ItemKey => ({
  pk: witnessPk(shardOf(tenant, stream)),
  sk: `${tenant}#${stream}`,
});

/** An API key's record (keys.ts): only the hash of the key is stored. */
export const apiKeyRecordKey = (keyId: string): ItemKey => ({ pk: `key#${keyId}`, sk: 'key' });

/** Written with the first key, so that the bootstrap key is created once per store. */
export const BOOTSTRAP_KEY: ItemKey = { pk: 'bootstrap', sk: 'bootstrap' };

/** The public keys that have signed this deployment's heads (signing-keys.ts). */
export const SIGNING_KEYS_KEY: ItemKey = { pk: 'signing-keys', sk: 'signing-keys' };

// ---- objects ----

/** Everything of a stream in the bucket (deleted with the stream). */
export const streamObjectPrefix = (tenant: string, stream: string): string =>
  `t/${tenant}/s/${stream}/`;

/**
 * Object key of the segment that starts at `firstSeq`. Seqs are zero-padded to 16 digits so
 * that listing a stream's prefix returns its segments in seq order.
 */
export const segmentPrefix = (tenant: string, stream: string): string =>
  `${streamObjectPrefix(tenant, stream)}seg/`;

export const segmentKey = (tenant: string, stream: string, firstSeq: number): string =>
  `${segmentPrefix(tenant, stream)}${pad16(firstSeq)}`;

/** The firstSeq named by a segment key, or undefined when the key is not a segment's. */
export const firstSeqOfKey = (key: string): number | undefined => {
  const m = /\/seg\/(\d{16})$/.exec(key);
  return m?.[1] === undefined ? undefined : Number(m[1]);
};

/**
 * Object key of a segment the compactor merged from firstSeq..lastSeq. The `-lastSeq` suffix
 * keeps it apart from every key an append can race for (`seg/{firstSeq}`), and sorts it right
 * after the append key of the same firstSeq.
 */
export const mergedSegmentKey = (
  tenant: string,
  stream: string,
  firstSeq: number,
  lastSeq: number,
): string => `${segmentKey(tenant, stream, firstSeq)}-${pad16(lastSeq)}`;

/** What a key under a stream's `seg/` names: an appended batch or a merged range. */
export const parseSegmentKey = (
  key: string,
): { firstSeq: number; lastSeq?: number } | undefined => {
  const m = /\/seg\/(\d{16})(?:-(\d{16}))?$/.exec(key);
  if (m?.[1] === undefined) return undefined;
  return m[2] === undefined
    ? { firstSeq: Number(m[1]) }
    : { firstSeq: Number(m[1]), lastSeq: Number(m[2]) };
};

/** The snapshot objects of a stream at `seq` (any digest). */
export const snapshotPrefix = (tenant: string, stream: string, seq: number): string =>
  `${streamObjectPrefix(tenant, stream)}snap/${pad16(seq)}-`;

/** Key of a snapshot object; the digest in the key keeps racing writers (forks) apart. */
export const snapshotKey = (
  tenant: string,
  stream: string,
  seq: number,
  stateDigest: string,
): string => `${snapshotPrefix(tenant, stream, seq)}${stateDigest}`;

/**
 * Object key of a stream's tile: the tlog-tiles path under the stream's prefix, beside
 * `seg/` and `snap/` (`t/{tenant}/s/{stream}/tile/0/x001/x234/067.p/12`). Deleting a stream
 * deletes its prefix, tiles included.
 */
export const tileKey = (tenant: string, stream: string, tile: TileId): string =>
  `${streamObjectPrefix(tenant, stream)}${tilePath(tile)}`;

/** A content-addressed chunk of a tenant: `t/{tenant}/chunks/{hash}` (chunk-store.ts). */
export const chunkPrefix = (tenant: string): string => `t/${tenant}/chunks/`;

export const chunkKey = (tenant: string, hash: string): string => `${chunkPrefix(tenant)}${hash}`;

/** The list of chunks a GC condemned under generation `gen` at `at` (chunk-gc.ts). */
export const chunkGcListKey = (tenant: string, gen: number, at: number): string =>
  `t/${tenant}/chunkgc/${pad16(gen)}-${pad16(at)}`;

/** A tenant's objects in the witness store (witness.ts). */
export const witnessObjectPrefix = (tenant: string): string => `w/${tenant}/`;

/** One witness run's object for a tenant. */
export const witnessObjectKey = (tenant: string, publishedAt: number, runId: string): string =>
  `${witnessObjectPrefix(tenant)}${pad16(publishedAt)}-${runId}.json`;
