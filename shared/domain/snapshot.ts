import { canonicalJson } from './canonical.js';
import { TamperedLedgerError } from './errors.js';
import { isHexHash, sha256, sha256Hex } from './hashing.js';
import type { JsonObject } from './state.js';
import { MerkleState } from './state-v2/index.js';
import { build } from './state-v2/node.js';

/**
 * Base snapshot codec (format v1): the full state of a stream at one seq.
 *
 *   8 bytes  magic "HEFSNAP" + u8 format version (= 1)
 *   u32      len(header), then the header as RFC 8785 canonical JSON:
 *            {format, tenant, stream, seq, hash, stateDigest, encoding, stateSeq?}
 *   rest     the state as RFC 8785 canonical JSON (encoding "jcs")
 *
 * `hash` is the chain hash of event `seq`; `stateDigest` is SHA-256 of the state bytes, so a
 * reader recomputes it from what it read. The `encoding` field is where a later version will
 * name a content-addressed chunk list (so that snapshots share unchanged parts) instead of
 * inline bytes; v1 readers refuse any encoding they do not know.
 *
 * A stream with state digest v2 (records-v2 `digestVersion`) writes `digestVersion: 2` in the
 * header, and `stateDigest` is then the Merkle digest of the state (docs/state-v2.md): the
 * reader rebuilds the tree from the bytes to check it, and hands the tree on. A header without
 * the field is v1; a reader expecting the other version refuses the snapshot.
 */

export const SNAPSHOT_FORMAT_VERSION = 1;
const MAGIC = Buffer.from('HEFSNAP\x01', 'latin1');

export interface SnapshotHeader {
  format: number;
  tenant: string;
  stream: string;
  seq: number;
  hash: string;
  stateDigest: string;
  encoding: 'jcs';
  /** 2: `stateDigest` is the v2 Merkle digest; absent: v1. */
  digestVersion?: 2;
  /** The last state-setting event at or before `seq` (absent on snapshots written before). */
  stateSeq?: number;
}

export interface Snapshot {
  header: SnapshotHeader;
  state: JsonObject;
  /** v2 snapshots: the verified tree of `state` (its JSON is `state`). */
  merkle?: MerkleState;
}

/** Encodes a snapshot; `stateJson` must be the canonical JSON of the state (already hashed). */
export const encodeSnapshot = (
  header: Omit<SnapshotHeader, 'format' | 'encoding'>,
  stateJson: string,
): Buffer => {
  const head = Buffer.from(
    canonicalJson({ ...header, format: SNAPSHOT_FORMAT_VERSION, encoding: 'jcs' }),
    'utf8',
  );
  const body = Buffer.from(stateJson, 'utf8');
  const buf = Buffer.allocUnsafe(MAGIC.length + 4 + head.length + body.length);
  MAGIC.copy(buf, 0);
  buf.writeUInt32BE(head.length, MAGIC.length);
  head.copy(buf, MAGIC.length + 4);
  body.copy(buf, MAGIC.length + 4 + head.length);
  return buf;
};

export interface SnapshotExpectation {
  tenant: string;
  stream: string;
  seq: number;
  stateDigest: string;
  /** The chain hash at seq, when the reader knows it. */
  hash?: string;
  /** The stream's digest version (absent: 1). */
  digestVersion?: 1 | 2;
  /** The stateSeq its index record names (absent: a record written before it was kept). */
  stateSeq?: number;
}

/** Decodes a snapshot and checks it against what the trusted index says; fails closed. */
export const decodeSnapshot = (bytes: Uint8Array, expect: SnapshotExpectation): Snapshot => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fail = (why: string): never => {
    throw new TamperedLedgerError(expect.seq, `snapshot ${why}`);
  };
  if (buf.length < MAGIC.length + 4 || !buf.subarray(0, MAGIC.length).equals(MAGIC))
    fail('is not a v1 snapshot');
  const headLength = buf.readUInt32BE(MAGIC.length);
  const bodyStart = MAGIC.length + 4 + headLength;
  if (bodyStart > buf.length) fail('header overruns the object');
  let header: SnapshotHeader | undefined;
  try {
    header = JSON.parse(buf.toString('utf8', MAGIC.length + 4, bodyStart)) as SnapshotHeader;
  } catch {
    fail('header is not JSON');
  }
  const h = header as SnapshotHeader;
  if (h.format !== SNAPSHOT_FORMAT_VERSION || h.encoding !== 'jcs')
    fail('has an unknown format or encoding');
  if (h.tenant !== expect.tenant || h.stream !== expect.stream || h.seq !== expect.seq)
    fail('names another stream or seq');
  if (!isHexHash(h.hash) || h.stateDigest !== expect.stateDigest) fail('names another state');
  if (expect.hash !== undefined && h.hash !== expect.hash) fail('names another chain hash');
  if (h.stateSeq !== expect.stateSeq) fail('names another state-setting seq than its record');
  const v2 = expect.digestVersion === 2;
  if ((h.digestVersion === 2) !== v2) fail('has another digest version than its stream');
  const body = buf.subarray(bodyStart);
  if (!v2 && sha256(body).toString('hex') !== expect.stateDigest)
    fail('state bytes do not match their digest');
  let state: unknown;
  try {
    state = JSON.parse(body.toString('utf8'));
  } catch {
    fail('state is not JSON');
  }
  if (typeof state !== 'object' || state === null || Array.isArray(state))
    fail('state is not an object');
  if (!v2) return { header: h, state: state as JsonObject };
  let merkle: MerkleState | undefined;
  try {
    merkle = MerkleState.fromNode(build(state as JsonObject, 0)[0]);
  } catch {
    fail('state is not plain JSON');
  }
  const tree = merkle as MerkleState;
  if (tree.digest() !== expect.stateDigest) fail('state bytes do not match their digest');
  return { header: h, state: tree.state, merkle: tree };
};

/**
 * Snapshot format v2 (docs/state-v2.md, "Snapshots v2"): the same magic with format byte 2
 * and a header naming the state's root chunk instead of a body. The state is stored as
 * content-addressed chunks under the tenant (shared/state/chunk-store.ts); the header's
 * `stateDigest` stays the stream's digest (v1 today), checked after the chunks are read.
 *
 *   8 bytes  "HEFSNAP" + u8 2
 *   u32      len(header), then the header as canonical JSON:
 *            {format: 2, tenant, stream, seq, hash, stateDigest, encoding: "chunks", root, stateSeq?}
 *   `stateSeq`: the last delta or fork at or before `seq`, which binds the base (state-binding.ts).
 */
export const SNAPSHOT_FORMAT_CHUNKS = 2;
const MAGIC_V2 = Buffer.from('HEFSNAP\x02', 'latin1');

export interface StateRootRef {
  format: 'hefesto.state';
  v: 2;
  digest: string;
  size: number;
}

export interface ChunkSnapshotHeader extends Omit<SnapshotHeader, 'format' | 'encoding'> {
  format: 2;
  encoding: 'chunks';
  root: StateRootRef;
}

export const encodeChunkSnapshot = (
  header: Omit<ChunkSnapshotHeader, 'format' | 'encoding'>,
): Buffer => {
  const head = Buffer.from(
    canonicalJson({ ...header, format: SNAPSHOT_FORMAT_CHUNKS, encoding: 'chunks' } as never),
    'utf8',
  );
  const buf = Buffer.allocUnsafe(MAGIC_V2.length + 4 + head.length);
  MAGIC_V2.copy(buf, 0);
  buf.writeUInt32BE(head.length, MAGIC_V2.length);
  head.copy(buf, MAGIC_V2.length + 4);
  return buf;
};

export const isRootRef = (v: unknown): v is StateRootRef => {
  const r = v as Partial<StateRootRef> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    r.format === 'hefesto.state' &&
    r.v === 2 &&
    isHexHash(r.digest) &&
    Number.isSafeInteger(r.size) &&
    (r.size as number) >= 2
  );
};

/**
 * A stored snapshot of either format: v1 carries the state, v2 the root of its chunks (the
 * caller reads them and checks the state against `expect.stateDigest`). Fails closed.
 */
export const decodeAnySnapshot = (
  bytes: Uint8Array,
  expect: SnapshotExpectation,
): Snapshot | { header: ChunkSnapshotHeader; root: StateRootRef } => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < MAGIC_V2.length + 4 || !buf.subarray(0, MAGIC_V2.length).equals(MAGIC_V2)) {
    return decodeSnapshot(bytes, expect);
  }
  const fail = (why: string): never => {
    throw new TamperedLedgerError(Math.max(1, expect.seq), `snapshot ${why}`);
  };
  const end = MAGIC_V2.length + 4 + buf.readUInt32BE(MAGIC_V2.length);
  if (end !== buf.length) fail('header does not fill the object');
  let h: ChunkSnapshotHeader | undefined;
  try {
    h = JSON.parse(buf.toString('utf8', MAGIC_V2.length + 4, end)) as ChunkSnapshotHeader;
  } catch {
    fail('header is not JSON');
  }
  const header = h as ChunkSnapshotHeader;
  if (header.format !== SNAPSHOT_FORMAT_CHUNKS || header.encoding !== 'chunks')
    fail('has an unknown format or encoding');
  if (!isRootRef(header.root)) fail('names no state root');
  if (
    header.tenant !== expect.tenant ||
    header.stream !== expect.stream ||
    header.seq !== expect.seq
  )
    fail('names another stream or seq');
  if (!isHexHash(header.hash) || header.stateDigest !== expect.stateDigest)
    fail('names another state');
  if (expect.hash !== undefined && header.hash !== expect.hash) fail('names another chain hash');
  if (header.stateSeq !== expect.stateSeq) fail('names another state-setting seq than its record');
  return { header, root: header.root };
};

export const digestOfJson = (stateJson: string): string => sha256Hex(stateJson);
