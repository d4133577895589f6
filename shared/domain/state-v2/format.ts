import { sha256 } from '../hashing.js';

/**
 * The constants and byte layouts of state digest v2 (docs/state-v2.md is normative; change
 * both together, and never change either for an existing version: a v3 gets new tags).
 *
 * Every hash input starts with the version byte and a tag byte, so no two kinds of node can
 * hash alike, and no v2 input can be a v1 one (a v1 digest hashes JSON text, whose first byte
 * is never 0x02).
 */

export const VERSION = 0x02;

export const TAG = {
  leaf: 0x00,
  arrayRoot: 0x01,
  objectRoot: 0x02,
  arrayPage: 0x03,
  objectPage: 0x04,
  stringRoot: 0x05,
  stringPage: 0x06,
  keyRank: 0x07,
} as const;

/** A value whose canonical JSON is at most this many bytes hashes as one leaf. */
export const INLINE_MAX = 1024;
/** Items per array page (every level): appends re-hash one page per level. */
export const ARRAY_FANOUT = 64;
/** An object node with at most this many members is one page (no key-rank cuts). */
export const OBJECT_FLAT_MAX = 32;
/** Entries after which an object page is cut even without a key boundary. */
export const OBJECT_MAX_FANOUT = 128;
/** Strings whose canonical JSON exceeds this are split into pages of this many bytes. */
export const STRING_PAGE = 512 * 1024;
/** Longest object key (UTF-8 bytes): keeps every object page under MAX_CHUNK_BYTES. */
export const MAX_KEY_BYTES = 4096;
/** Deepest nesting of a v2 state (the root object is depth 0). */
export const MAX_DEPTH = 1000;
/** No chunk is larger than this (the page sizes above guarantee it). */
export const MAX_CHUNK_BYTES = 1024 * 1024;
/** Default limit of one value set by reference (configurable by the service). */
export const MAX_VALUE_BYTES = 64 * 1024 * 1024;

export const HASH_LENGTH = 32;

/** Slot forms in a container chunk: a small leaf inline, or a hash. */
export const SLOT_INLINE = 0x00;
export const SLOT_HASH = 0x01;

/**
 * One growing scratch buffer for hash inputs: hashing is synchronous, so no two writers ever
 * share it, and reusing it keeps a page hash to one copy and one SHA-256.
 */
let scratch = Buffer.allocUnsafe(64 * 1024);

export class Writer {
  offset = 0;

  get buffer(): Buffer {
    return scratch;
  }

  reserve(bytes: number): void {
    if (this.offset + bytes <= scratch.length) return;
    const next = Buffer.allocUnsafe(Math.max(scratch.length * 2, this.offset + bytes));
    scratch.copy(next, 0, 0, this.offset);
    scratch = next;
  }

  u8(value: number): void {
    this.reserve(1);
    scratch[this.offset++] = value;
  }

  u32(value: number): void {
    this.reserve(4);
    scratch.writeUInt32BE(value, this.offset);
    this.offset += 4;
  }

  /** Unsigned 64-bit big-endian; counts never exceed 2^53. */
  u64(value: number): void {
    this.reserve(8);
    scratch.writeUInt32BE(Math.floor(value / 2 ** 32), this.offset);
    scratch.writeUInt32BE(value >>> 0, this.offset + 4);
    this.offset += 8;
  }

  bytes(data: Uint8Array): void {
    this.reserve(data.length);
    scratch.set(data, this.offset);
    this.offset += data.length;
  }

  utf8(text: string, byteLength: number): void {
    this.reserve(byteLength);
    scratch.write(text, this.offset, 'utf8');
    this.offset += byteLength;
  }

  /** SHA-256 of what was written. */
  digest(): Buffer {
    return sha256(scratch.subarray(0, this.offset));
  }

  /** A copy of what was written. */
  copy(): Buffer {
    return Buffer.from(scratch.subarray(0, this.offset));
  }
}

export const writer = (tag: number): Writer => {
  const w = new Writer();
  w.u8(VERSION);
  w.u8(tag);
  return w;
};

/** Hash of a leaf: H(0x02 ‖ 0x00 ‖ JCS bytes). */
export const leafHash = (jcs: string, byteLength: number): Buffer => {
  const w = writer(TAG.leaf);
  w.utf8(jcs, byteLength);
  return w.digest();
};

export const leafHashOfBytes = (jcs: Uint8Array): Buffer => {
  const w = writer(TAG.leaf);
  w.bytes(jcs);
  return w.digest();
};

/**
 * Rank of an object key: the number of leading zero hex digits of H(0x02 ‖ 0x07 ‖ key). An
 * object page ends after a key whose rank exceeds the page's level, so boundaries depend on
 * the keys alone (an insert touches one page per level), expected fanout 16.
 */
export const keyRank = (key: Uint8Array): number => {
  const w = writer(TAG.keyRank);
  w.bytes(key);
  const h = w.digest();
  let rank = 0;
  for (const byte of h) {
    if (byte === 0) {
      rank += 2;
      continue;
    }
    if (byte < 16) rank++;
    break;
  }
  return rank;
};

export const toHex = (hash: Uint8Array): string => Buffer.from(hash).toString('hex');

export const fromHex = (hex: string): Buffer => Buffer.from(hex, 'hex');
