import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { InvalidFormatError, InvalidInputError } from './errors.js';
import { HEX_HASH_PATTERN } from './hashing.js';
import { type Ed25519PublicJwk, HEAD_ALG, type JwkSet, parseJwks } from './signed-head-jwk.js';

/**
 * The node:crypto public key of a JWK (imported once per key: verifying is then ~2x cheaper).
 * Module-private: no exported type names node:crypto, so the client package's types need no
 * @types/node.
 */
const publicKeyOf = (jwk: Ed25519PublicJwk): KeyObject =>
  createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });

/**
 * Signed tree heads (docs/proofs.md, "Signed tree heads"): the server's signed statement
 * that stream (tenant, streamId) has, at `timestamp`, a tree of `treeSize` leaves starting
 * after seq `treeBase`, whose root is `rootHash`. Every append answers with one (the
 * receipt); the client keeps the last one it verified per stream.
 *
 * The signature covers a length-prefixed binary preimage with a domain tag, never JSON, so
 * nothing about JSON spelling (key order, number formats, escapes) can change what is signed:
 *
 *   preimage = lp("hefesto/tree-head/v1") ‖ lp(tenant) ‖ lp(streamId)
 *            ‖ u64 treeBase ‖ u64 treeSize ‖ rootHash (32 bytes) ‖ u64 timestamp
 *            ‖ lp(keyId) ‖ lp(alg)
 *   lp(s)    = u32 byteLength(UTF-8 s) ‖ UTF-8 s;  integers unsigned big-endian
 *   signature = Ed25519(private key, preimage)  (RFC 8032, pure Ed25519, 64 bytes)
 */

export const TREE_HEAD_TAG = 'hefesto/tree-head/v1';

/** What the server states; `keyId` and `alg` come from the signer. */
export interface TreeHeadFields {
  tenant: string;
  streamId: string;
  /** Seq before the first leaf (records-v2 `treeBase`): leaf i is event treeBase + i + 1. */
  treeBase: number;
  treeSize: number;
  /** MTH of the tree, 64 lowercase hex. */
  rootHash: string;
  /** Server clock, ms since the Unix epoch. */
  timestamp: number;
}

/** A signed tree head as the API sends it (JSON). */
export interface SignedTreeHead extends TreeHeadFields {
  keyId: string;
  alg: typeof HEAD_ALG;
  /** The 64-byte Ed25519 signature, base64url without padding. */
  signature: string;
}

/** The signing side of the Signer port (shared/ports/signer.ts); declared here so the domain needs no port. */
export interface HeadSigner {
  readonly keyId: string;
  readonly alg: typeof HEAD_ALG;
  /** Ed25519 signature of `data` (64 bytes). Synchronous: the key lives in process. */
  sign(data: Uint8Array): Uint8Array;
}

const MAX_ID_BYTES = 1024;
const SIGNATURE = /^[A-Za-z0-9_-]{86}$/;
const encoder = new TextEncoder();

const isU64Safe = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/** Checks the fields' types and ranges; `Err` picks the error (bad input vs bad stored bytes). */
const checkFields = (
  h: Partial<Record<keyof SignedTreeHead, unknown>>,
  Err: typeof InvalidInputError,
): void => {
  for (const name of ['tenant', 'streamId', 'keyId'] as const) {
    const s = h[name];
    if (typeof s !== 'string' || s.length === 0 || encoder.encode(s).length > MAX_ID_BYTES) {
      throw new Err(
        `tree head ${name} must be a non-empty string of at most ${MAX_ID_BYTES} bytes`,
      );
    }
  }
  for (const name of ['treeBase', 'treeSize', 'timestamp'] as const) {
    if (!isU64Safe(h[name])) throw new Err(`tree head ${name} must be an integer 0..2^53-1`);
  }
  if (typeof h.rootHash !== 'string' || !HEX_HASH_PATTERN.test(h.rootHash)) {
    throw new Err('tree head rootHash must be 64 lowercase hex characters');
  }
  if (h.alg !== HEAD_ALG) throw new Err(`tree head alg must be ${HEAD_ALG}`);
};

/** The exact bytes that are signed (see the file comment). */
export const treeHeadPreimage = (
  head: TreeHeadFields & { keyId: string; alg: string },
): Uint8Array => {
  checkFields(head, InvalidInputError);
  const strings = [TREE_HEAD_TAG, head.tenant, head.streamId].map((s) => encoder.encode(s));
  const tail = [head.keyId, head.alg].map((s) => encoder.encode(s));
  const size = [...strings, ...tail].reduce((n, s) => n + 4 + s.length, 0) + 3 * 8 + 32;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  const lp = (s: Uint8Array) => {
    view.setUint32(at, s.length);
    out.set(s, at + 4);
    at += 4 + s.length;
  };
  const u64 = (n: number) => {
    view.setBigUint64(at, BigInt(n));
    at += 8;
  };
  for (const s of strings) lp(s);
  u64(head.treeBase);
  u64(head.treeSize);
  out.set(Buffer.from(head.rootHash, 'hex'), at);
  at += 32;
  u64(head.timestamp);
  for (const s of tail) lp(s);
  return out;
};

/** Signs a tree head with the signer's current key. */
export const signTreeHead = (fields: TreeHeadFields, signer: HeadSigner): SignedTreeHead => {
  const unsigned = {
    tenant: fields.tenant,
    streamId: fields.streamId,
    treeBase: fields.treeBase,
    treeSize: fields.treeSize,
    rootHash: fields.rootHash,
    timestamp: fields.timestamp,
    keyId: signer.keyId,
    alg: signer.alg,
  };
  const signature = signer.sign(treeHeadPreimage(unsigned));
  if (signature.length !== 64) throw new InvalidFormatError('an Ed25519 signature has 64 bytes');
  return { ...unsigned, signature: Buffer.from(signature).toString('base64url') };
};

/** Parses a signed head from JSON (an untrusted answer): exact types, unknown fields dropped. */
export const parseSignedTreeHead = (value: unknown): SignedTreeHead => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidFormatError('a signed tree head must be an object');
  }
  const h = value as Partial<Record<keyof SignedTreeHead, unknown>>;
  checkFields(h, InvalidFormatError);
  if (
    typeof h.signature !== 'string' ||
    !SIGNATURE.test(h.signature) ||
    Buffer.from(h.signature, 'base64url').toString('base64url') !== h.signature // one spelling only
  ) {
    throw new InvalidFormatError('tree head signature must be 64 bytes, base64url');
  }
  const { tenant, streamId, treeBase, treeSize, rootHash, timestamp, keyId, signature } =
    h as SignedTreeHead;
  return {
    tenant,
    streamId,
    treeBase,
    treeSize,
    rootHash,
    timestamp,
    keyId,
    alg: HEAD_ALG,
    signature,
  };
};

export type HeadVerdict = { ok: true; key: Ed25519PublicJwk } | { ok: false; reason: string };

/**
 * The public keys a verifier trusts, imported once. Heads signed by any key in the set
 * verify, the current one and retired ones alike (rotation: old key ids stay verifiable).
 *
 * @example
 * ```ts
 * const keys = new HeadKeys(await (await fetch(`${base}/v1/signing-keys`)).json());
 * const verdict = keys.verify(receipt);
 * if (!verdict.ok) throw new Error(verdict.reason);
 * ```
 */
export class HeadKeys {
  readonly #keys = new Map<string, { jwk: Ed25519PublicJwk; key: KeyObject }>();

  constructor(jwks: JwkSet | unknown) {
    for (const jwk of parseJwks(jwks).keys) this.#keys.set(jwk.kid, { jwk, key: publicKeyOf(jwk) });
  }

  get keyIds(): string[] {
    return [...this.#keys.keys()];
  }

  /** Whether `head` (parsed or raw JSON) carries a valid signature by one of these keys. */
  verify(head: SignedTreeHead | unknown): HeadVerdict {
    let parsed: SignedTreeHead;
    try {
      parsed = parseSignedTreeHead(head);
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
    const entry = this.#keys.get(parsed.keyId);
    if (entry === undefined) return { ok: false, reason: `unknown signing key ${parsed.keyId}` };
    const signature = Buffer.from(parsed.signature, 'base64url');
    const valid = verify(null, treeHeadPreimage(parsed), entry.key, signature);
    return valid ? { ok: true, key: entry.jwk } : { ok: false, reason: 'bad tree head signature' };
  }
}

/** One-shot form of `new HeadKeys(jwks).verify(head)`. */
export const verifySignedTreeHead = (head: unknown, jwks: JwkSet | unknown): HeadVerdict =>
  new HeadKeys(jwks).verify(head);

export {
  type Ed25519PublicJwk,
  HEAD_ALG,
  type JwkSet,
  jwkThumbprint,
  parseJwks,
  parsePublicJwk,
} from './signed-head-jwk.js';
