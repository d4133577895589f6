import { InvalidFormatError } from './errors.js';
import { sha256 } from './hashing.js';

/**
 * Public signing keys as JWKs (RFC 7517, RFC 8037 for Ed25519): what `GET /v1/signing-keys`
 * serves and what a client verifies signed tree heads with. Pure apart from node:crypto.
 */

export const HEAD_ALG = 'EdDSA';

/** An Ed25519 public key as published: `{kty: OKP, crv: Ed25519, x, kid, alg: EdDSA, use: sig}`. */
export interface Ed25519PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  /** The 32-byte public key, base64url without padding. */
  x: string;
  kid: string;
  alg: typeof HEAD_ALG;
  use: 'sig';
}

export interface JwkSet {
  keys: Ed25519PublicJwk[];
}

const B64URL_32 = /^[A-Za-z0-9_-]{43}$/;
const KID = /^[\x21-\x7e]{1,128}$/;

/**
 * RFC 7638 JWK thumbprint of an Ed25519 key: base64url(SHA-256 of `{"crv","kty","x"}` in that
 * order, no spaces). Hefesto's default key id: it names the key by its own bytes, so two
 * keys can never share an id.
 */
export const jwkThumbprint = (x: string): string =>
  sha256(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).toString('base64url');

/** Checks one published key; anything but an Ed25519 signing key is refused. */
export const parsePublicJwk = (value: unknown): Ed25519PublicJwk => {
  const v = value as Partial<Record<keyof Ed25519PublicJwk, unknown>> | null;
  if (typeof v !== 'object' || v === null) throw new InvalidFormatError('a JWK must be an object');
  if (v.kty !== 'OKP' || v.crv !== 'Ed25519') {
    throw new InvalidFormatError('signing keys must be kty OKP, crv Ed25519');
  }
  if (v.alg !== undefined && v.alg !== HEAD_ALG)
    throw new InvalidFormatError('JWK alg must be EdDSA');
  if (v.use !== undefined && v.use !== 'sig') throw new InvalidFormatError('JWK use must be sig');
  if (
    typeof v.x !== 'string' ||
    !B64URL_32.test(v.x) ||
    Buffer.from(v.x, 'base64url').length !== 32
  ) {
    throw new InvalidFormatError('JWK x must be a base64url 32-byte public key');
  }
  if (typeof v.kid !== 'string' || !KID.test(v.kid)) {
    throw new InvalidFormatError('JWK kid must be 1..128 printable ASCII characters');
  }
  return { kty: 'OKP', crv: 'Ed25519', x: v.x, kid: v.kid, alg: HEAD_ALG, use: 'sig' };
};

/**
 * Parses a JWK set. Keys of other types are skipped (a set may carry keys for other uses);
 * an Ed25519 key that is malformed, or two keys with one kid, fail the whole set.
 */
export const parseJwks = (value: unknown): JwkSet => {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new InvalidFormatError('a JWK set must have a keys array');
  const out: Ed25519PublicJwk[] = [];
  for (const k of keys) {
    if ((k as { kty?: unknown } | null)?.kty !== 'OKP') continue;
    const jwk = parsePublicJwk(k);
    if (out.some((o) => o.kid === jwk.kid)) {
      throw new InvalidFormatError(`two keys share the kid ${jwk.kid}`);
    }
    out.push(jwk);
  }
  return { keys: out };
};
