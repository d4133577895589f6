import { type HashPort, toHex } from '../../shared/domain/hash-port.js';

/**
 * Signed tree heads and inclusion proofs (docs/proofs.md, RFC 9162 section 2.1), checked in
 * the browser: the head's Ed25519 signature with WebCrypto against the server's published
 * key, and an event's inclusion in that head's tree from its chain hash and the proof path.
 */

export interface SignedTreeHead {
  tenant: string;
  streamId: string;
  treeBase: number;
  treeSize: number;
  rootHash: string;
  timestamp: number;
  keyId: string;
  alg: string;
  signature: string;
}

export interface InclusionProof {
  leafIndex: number;
  treeSize: number;
  path: string[];
}

export interface ConsistencyProof {
  from: number;
  to: number;
  path: string[];
}

/** docs/proofs.md: longer paths are refused unread (a tree of 2^53 leaves needs 53). */
export const MAX_PATH = 64;

/** SHA-256 of the empty string: the root of the empty tree, MTH({}). */
export const EMPTY_ROOT = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export interface PublicJwk {
  kty: string;
  crv: string;
  x: string;
  kid?: string;
}

const encoder = new TextEncoder();

const hex = (text: string): Uint8Array => {
  if (!/^([0-9a-f]{2})*$/.test(text)) throw new Error('not lowercase hex');
  return Uint8Array.from(text.match(/../g) ?? [], (b) => Number.parseInt(b, 16));
};

const base64url = (text: string): Uint8Array => {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  return Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) =>
    c.charCodeAt(0),
  );
};

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

const u32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
};

const u64 = (n: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
};

const lp = (text: string) => {
  const bytes = encoder.encode(text);
  return concat(u32(bytes.length), bytes);
};

/** The bytes a tree head's signature covers. */
export const treeHeadPreimage = (head: SignedTreeHead): Uint8Array =>
  concat(
    lp('hefesto/tree-head/v1'),
    lp(head.tenant),
    lp(head.streamId),
    u64(head.treeBase),
    u64(head.treeSize),
    hex(head.rootHash),
    u64(head.timestamp),
    lp(head.keyId),
    lp(head.alg),
  );

/** Whether `key` signed `head` (Ed25519, WebCrypto). */
export const verifyTreeHead = async (head: SignedTreeHead, key: PublicJwk): Promise<boolean> => {
  if (head.alg !== 'EdDSA' || key.kty !== 'OKP' || key.crv !== 'Ed25519') return false;
  const subtle = globalThis.crypto.subtle;
  const imported = await subtle.importKey(
    'jwk',
    { kty: key.kty, crv: key.crv, x: key.x },
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  return subtle.verify(
    { name: 'Ed25519' },
    imported,
    base64url(head.signature) as Uint8Array<ArrayBuffer>,
    treeHeadPreimage(head) as Uint8Array<ArrayBuffer>,
  );
};

/**
 * RFC 9162 section 2.1.3.2: whether the entry `chainHash` (an event's hash) is leaf
 * `proof.leafIndex` of the tree of `proof.treeSize` leaves whose root is `rootHash`.
 */
export const verifyInclusion = async (
  port: HashPort,
  chainHash: string,
  proof: InclusionProof,
  rootHash: string,
): Promise<boolean> => {
  const { leafIndex, treeSize, path } = proof;
  if (!(leafIndex >= 0 && leafIndex < treeSize) || path.length > MAX_PATH) return false;
  const node = async (left: Uint8Array, right: Uint8Array) =>
    port.sha256(concat(Uint8Array.of(1), left, right));
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = await port.sha256(concat(Uint8Array.of(0), hex(chainHash)));
  for (const step of path) {
    const p = hex(step);
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = await node(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await node(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && toHex(r) === rootHash;
};

const half = (n: number) => Math.floor(n / 2);
const odd = (n: number) => n % 2 === 1;
const powerOfTwo = (n: number) => {
  let m = n;
  while (m > 1 && !odd(m)) m = half(m);
  return m === 1;
};

/**
 * RFC 9162 section 2.1.4.2, with the edges of docs/proofs.md: whether the tree of `from`
 * leaves with root `fromRoot` is a prefix of the tree of `to` leaves with root `toRoot`.
 * `from = 0` (the empty tree) and `from = to` take the empty path only.
 */
export const verifyConsistency = async (
  port: HashPort,
  proof: ConsistencyProof,
  fromRoot: string,
  toRoot: string,
): Promise<boolean> => {
  const { from, to, path } = proof;
  if (!(Number.isSafeInteger(from) && Number.isSafeInteger(to) && 0 <= from && from <= to)) {
    return false;
  }
  if (path.length > MAX_PATH) return false;
  if (from === 0) return path.length === 0 && fromRoot === EMPTY_ROOT;
  if (from === to) return path.length === 0 && fromRoot === toRoot;
  if (path.length === 0) return false;
  const node = async (left: Uint8Array, right: Uint8Array) =>
    port.sha256(concat(Uint8Array.of(1), left, right));
  // 1. A power-of-two `from` is a perfect subtree: its root starts the path.
  const steps = powerOfTwo(from) ? [fromRoot, ...path] : path;
  let fn = from - 1;
  let sn = to - 1;
  // 3. Skip the levels where the old tree's last leaf is a right child.
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  const [first, ...rest] = steps.map(hex);
  if (!first) return false;
  let fr = first;
  let sr = first;
  for (const c of rest) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = await node(c, fr);
      sr = await node(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = await node(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && toHex(fr) === fromRoot && toHex(sr) === toRoot;
};

const HEX64 = /^[0-9a-f]{64}$/;
const B64URL_SIG = /^[A-Za-z0-9_-]{86}$/;
const size = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * A signed tree head (or a receipt, the head an append answered) read exactly as
 * docs/proofs.md defines it; a message naming the first field that is wrong otherwise.
 * Unknown fields are dropped: they are not signed.
 */
export const parseTreeHead = (value: unknown): SignedTreeHead | string => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'not a JSON object';
  }
  const v = value as Record<string, unknown>;
  const text = (k: string) => typeof v[k] === 'string' && (v[k] as string).length > 0;
  if (!text('tenant')) return 'tenant: a non-empty string';
  if (!text('streamId')) return 'streamId: a non-empty string';
  if (!size(v.treeBase)) return 'treeBase: a whole number';
  if (!size(v.treeSize)) return 'treeSize: a whole number';
  if (typeof v.rootHash !== 'string' || !HEX64.test(v.rootHash)) return 'rootHash: 64 hex';
  if (!size(v.timestamp)) return 'timestamp: ms since the epoch';
  if (!text('keyId')) return 'keyId: a non-empty string';
  if (v.alg !== 'EdDSA') return 'alg: EdDSA';
  if (typeof v.signature !== 'string' || !B64URL_SIG.test(v.signature)) {
    return 'signature: 64 bytes of base64url';
  }
  const { tenant, streamId, treeBase, treeSize, rootHash, timestamp, keyId, alg, signature } =
    v as unknown as SignedTreeHead;
  return { tenant, streamId, treeBase, treeSize, rootHash, timestamp, keyId, alg, signature };
};
