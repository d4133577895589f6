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
  if (!(leafIndex >= 0 && leafIndex < treeSize)) return false;
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
