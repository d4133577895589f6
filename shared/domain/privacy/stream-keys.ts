import { createHmac, hkdfSync } from 'node:crypto';
import { InvalidInputError } from '../errors.js';

/**
 * The keys of one stream life (its key record's `keyId`), derived from its secret `S` (docs/privacy.md,
 * Decision 3). Each key is HKDF-SHA256 of `S` under its own label, so holding one (a reader
 * holds `commit`) gives no other:
 *
 *   k = HKDF-SHA256(ikm = S, salt = "", info = label ‖ lp(tenant) ‖ lp(stream) ‖ lp(keyId), L = 32)
 *
 * labels: "hefesto/v1/commit" (payload commitments), "hefesto/v1/digest" (keyed digests and
 * chunk addresses), "hefesto/v1/content" (AES-256-GCM content keys; one per content secret
 * version, so the content key's input is the version's own secret `S_i`).
 */

export const STREAM_SECRET_BYTES = 32;

export interface StreamScope {
  tenant: string;
  stream: string;
  keyId: string;
}

export interface StreamKeys {
  /** k_c: the payload commitment key (served to `read` keys). */
  commit: Buffer;
  /** k_d: keys every digest and chunk address stored at rest. */
  digest: Buffer;
  /** k_e: the AES-256-GCM content key. */
  content: Buffer;
}

export const lp = (value: string | Uint8Array): Buffer => {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
  const out = Buffer.allocUnsafe(4 + bytes.length);
  out.writeUInt32BE(bytes.length, 0);
  bytes.copy(out, 4);
  return out;
};

const info = (label: string, scope: StreamScope): Buffer =>
  Buffer.concat([Buffer.from(label, 'utf8'), lp(scope.tenant), lp(scope.stream), lp(scope.keyId)]);

const derive = (secret: Uint8Array, label: string, scope: StreamScope): Buffer => {
  if (secret.length !== STREAM_SECRET_BYTES) {
    throw new InvalidInputError(`a stream secret is ${STREAM_SECRET_BYTES} bytes`);
  }
  return Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), info(label, scope), 32));
};

/** The commitment key alone (what a reader is handed). */
export const deriveCommitKey = (secret: Uint8Array, scope: StreamScope): Buffer =>
  derive(secret, 'hefesto/v1/commit', scope);

/**
 * Every key of a stream life. `contentSecret` is the content key version's own secret
 * `S_i`; version 0 is `S` itself.
 */
export const deriveStreamKeys = (
  secret: Uint8Array,
  scope: StreamScope,
  contentSecret: Uint8Array = secret,
): StreamKeys => ({
  commit: deriveCommitKey(secret, scope),
  digest: derive(secret, 'hefesto/v1/digest', scope),
  content: derive(contentSecret, 'hefesto/v1/content', scope),
});

/** K(x): the keyed form of a public digest as it is stored at rest (hex). */
export const keyedDigest = (digestKey: Uint8Array, digestHex: string): string =>
  createHmac('sha256', digestKey).update(Buffer.from(digestHex, 'hex')).digest('hex');
