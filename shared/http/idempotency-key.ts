import { canonicalJson } from '../domain/canonical.js';
import { sha256Hex } from '../domain/hashing.js';

/**
 * The Idempotency-Key request header (IETF httpapi draft "The Idempotency-Key HTTP Header
 * Field"). The draft makes it an RFC 8941 sf-string: `Idempotency-Key: "8e03978e-40d5"`.
 * Many clients send the bare value, so that is accepted too when it cannot be mistaken for
 * anything else (no quotes, backslashes, commas or spaces).
 *
 * The key is 1..255 printable ASCII characters once unquoted.
 */

const MAX_KEY_LENGTH = 255;
const BARE = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]{1,255}$/;
const QUOTED = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;

/** The key a header value names, or undefined when the value is not a valid key. */
export const parseIdempotencyKey = (value: string): string | undefined => {
  if (BARE.test(value)) return value;
  const quoted = QUOTED.exec(value)?.[1];
  if (quoted === undefined) return undefined;
  const key = quoted.replace(/\\(["\\])/g, '$1');
  return key.length >= 1 && key.length <= MAX_KEY_LENGTH ? key : undefined;
};

/**
 * The request fingerprint stored with the key: a retry must repeat the same method, path
 * and body (compared as canonical JSON, so whitespace and key order do not matter).
 * The tenant is not part of it: idempotency records are already kept per tenant.
 */
export const requestDigest = (method: string, path: string, body: unknown): string =>
  sha256Hex(canonicalJson({ method, path, body }));
