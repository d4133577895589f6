import { InvalidFormatError } from '../errors.js';
import { sha256 } from '../hashing.js';
import {
  HASH_LENGTH,
  leafHashOfBytes,
  MAX_CHUNK_BYTES,
  SLOT_HASH,
  SLOT_INLINE,
  TAG,
  toHex,
  VERSION,
  Writer,
} from './format.js';

/** Parsing and checking chunks (layouts in chunks.ts and docs/state-v2.md, "Chunks"). */

export interface Slot {
  /** Objects: the key's UTF-8 bytes. */
  key?: Buffer;
  hash: Buffer;
  /** An inline leaf's canonical JSON. */
  inline?: Buffer;
}

export type ParsedChunk =
  | { tag: typeof TAG.leaf; jcs: Buffer }
  | { tag: typeof TAG.stringPage; bytes: Buffer }
  | { tag: typeof TAG.stringRoot; size: number; pages: Buffer[] }
  | {
      tag:
        | typeof TAG.arrayRoot
        | typeof TAG.objectRoot
        | typeof TAG.arrayPage
        | typeof TAG.objectPage;
      level: number;
      count?: number;
      slots: Slot[];
    };

const malformed = (why: string): never => {
  throw new InvalidFormatError(`state chunk ${why}`);
};

/** Parses a chunk (or a node's hash input, `preimage: true`: no inline slots). */
export const parseChunk = (bytes: Uint8Array, preimage = false): ParsedChunk => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length > MAX_CHUNK_BYTES + 16) malformed('is too large');
  if (buf.length < 2 || buf[0] !== VERSION) malformed('is not a v2 chunk');
  const tag = buf[1] as number;
  let at = 2;
  const need = (n: number) => {
    if (at + n > buf.length) malformed('is truncated');
  };
  const u64 = () => {
    need(8);
    const value = buf.readUInt32BE(at) * 2 ** 32 + buf.readUInt32BE(at + 4);
    at += 8;
    return value;
  };
  const hash = () => {
    need(HASH_LENGTH);
    at += HASH_LENGTH;
    return buf.subarray(at - HASH_LENGTH, at);
  };
  if (tag === TAG.leaf) return { tag, jcs: buf.subarray(2) };
  if (tag === TAG.stringPage) return { tag, bytes: buf.subarray(2) };
  if (tag === TAG.stringRoot) {
    const size = u64();
    const pages: Buffer[] = [];
    while (at < buf.length) pages.push(hash());
    return { tag, size, pages };
  }
  if (tag < TAG.arrayRoot || tag > TAG.objectPage) return malformed(`has unknown tag ${tag}`);
  const root = tag === TAG.arrayRoot || tag === TAG.objectRoot;
  const object = tag === TAG.objectRoot || tag === TAG.objectPage;
  const count = root ? u64() : undefined;
  need(1);
  const level = buf[at++] as number;
  const slots: Slot[] = [];
  while (at < buf.length) {
    const slot: Partial<Slot> = {};
    if (object) {
      need(4);
      const length = buf.readUInt32BE(at);
      at += 4;
      need(length);
      slot.key = buf.subarray(at, at + length);
      at += length;
    }
    const form = preimage ? SLOT_HASH : buf[at++];
    if (form === SLOT_INLINE && level === 0) {
      need(4);
      const length = buf.readUInt32BE(at);
      at += 4;
      need(length);
      slot.inline = buf.subarray(at, at + length);
      at += length;
      slot.hash = leafHashOfBytes(slot.inline);
    } else if (form === SLOT_HASH) {
      slot.hash = Buffer.from(hash());
    } else {
      malformed('has a bad slot');
    }
    slots.push(slot as Slot);
  }
  if (slots.length === 0) malformed('is an empty page');
  const container = tag as Extract<ParsedChunk, { slots: Slot[] }>['tag'];
  return count === undefined
    ? { tag: container, level, slots }
    : { tag: container, level, count, slots };
};

/** The node's hash input (inline leaves replaced by their hashes, form bytes dropped). */
export const preimageOf = (bytes: Uint8Array, parsed: ParsedChunk): Buffer =>
  parsed.tag === TAG.leaf || parsed.tag === TAG.stringPage || parsed.tag === TAG.stringRoot
    ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    : rewrite(parsed);

const rewrite = (parsed: Extract<ParsedChunk, { slots: Slot[] }>): Buffer => {
  const w = new Writer();
  w.u8(VERSION);
  w.u8(parsed.tag);
  if (parsed.count !== undefined) w.u64(parsed.count);
  w.u8(parsed.level);
  for (const slot of parsed.slots) {
    if (slot.key) {
      w.u32(slot.key.length);
      w.bytes(slot.key);
    }
    w.bytes(slot.hash);
  }
  return w.copy();
};

/** Parses a chunk and checks it against the hash it is stored under; fails closed. */
export const verifyChunk = (bytes: Uint8Array, hash: string): ParsedChunk => {
  const parsed = parseChunk(bytes);
  if (toHex(sha256(preimageOf(bytes, parsed))) !== hash) {
    throw new InvalidFormatError(`state chunk ${hash} does not match its hash`);
  }
  return parsed;
};
