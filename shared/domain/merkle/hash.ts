import { InvalidFormatError, InvalidInputError } from '../errors.js';
import { HASH_BYTES, HEX_HASH_PATTERN, sha256 } from '../hashing.js';

/**
 * RFC 9162 §2.1.1 hashing. Leaves and interior nodes carry different one-byte prefixes
 * (0x00, 0x01), so no interior node can be passed off as a leaf (second-preimage attack).
 * Hashes are 32-byte `Uint8Array`s inside the tree code and lowercase hex at the edges (JSON,
 * the head record).
 */

/**
 * Digests as plain Uint8Arrays, not Buffers: `Buffer#slice` is a view where `Uint8Array#slice`
 * copies, and mixing the two makes equality checks and defensive copies lie.
 */
const digest = (data: Uint8Array): Uint8Array => {
  const b = sha256(data);
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
};

/** MTH({}) = SHA-256 of the empty string: the root of a tree of size 0. */
export const EMPTY_ROOT: Uint8Array = digest(new Uint8Array(0));

// One-shot hashing copies its input, so one scratch buffer per shape is safe to reuse
// (JavaScript runs this synchronously): no allocation per hash besides the digest.
const leafScratch = new Uint8Array(1 + HASH_BYTES);
const nodeScratch = new Uint8Array(1 + 2 * HASH_BYTES);
leafScratch[0] = 0x00;
nodeScratch[0] = 0x01;

/**
 * The leaf hash of an entry: SHA-256(0x00 ‖ entry). Hefesto's entries are the events' 32-byte
 * chain hashes; other lengths are accepted so the RFC 6962 reference vectors can be checked.
 */
export const leafHash = (entry: Uint8Array): Uint8Array => {
  if (entry.length === HASH_BYTES) {
    leafScratch.set(entry, 1);
    return digest(leafScratch);
  }
  const data = new Uint8Array(1 + entry.length);
  data.set(entry, 1);
  return digest(data);
};

/** An interior node: SHA-256(0x01 ‖ left ‖ right). */
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => {
  // A shorter input would hash stale scratch bytes: refuse it rather than hash garbage.
  if (left.length !== HASH_BYTES || right.length !== HASH_BYTES) {
    throw new InvalidInputError('tree hashes are 32 bytes');
  }
  nodeScratch.set(left, 1);
  nodeScratch.set(right, 1 + HASH_BYTES);
  return digest(nodeScratch);
};

export const hashToHex = (hash: Uint8Array): string =>
  Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString('hex');

/** Parses 64 lowercase hex characters; anything else is `InvalidFormatError` (fail closed). */
export const hexToHash = (hex: unknown, what = 'hash'): Uint8Array => {
  if (typeof hex !== 'string' || !HEX_HASH_PATTERN.test(hex)) {
    throw new InvalidFormatError(`${what} is not 64 lowercase hex characters`);
  }
  return new Uint8Array(Buffer.from(hex, 'hex'));
};

/** The leaf hash of an event, from its chain hash as the API shows it (hex). */
export const eventLeafHash = (chainHashHex: string): Uint8Array =>
  leafHash(hexToHash(chainHashHex, 'chain hash'));

export const hashesEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
};
