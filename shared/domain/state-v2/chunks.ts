import { canonicalJson, type JsonValue } from '../canonical.js';
import { InvalidFormatError } from '../errors.js';
import { sha256 } from '../hashing.js';
import {
  HASH_LENGTH,
  leafHashOfBytes,
  MAX_CHUNK_BYTES,
  STRING_PAGE,
  TAG,
  toHex,
  VERSION,
  Writer,
  writer,
} from './format.js';
import { build, isInline } from './node.js';
import type { ChunkRef } from './ops.js';
import {
  Kind,
  type Level,
  type ObjectEntry,
  type PageEntry,
  type SeqTree,
  type VNode,
} from './types.js';

/**
 * Chunks (docs/state-v2.md, "Chunks"): every node of the tree except a leaf of at most
 * INLINE_MAX bytes is stored as one chunk under its hash. A chunk's bytes are its node's hash
 * input, except that in a container page a child that is a small leaf travels inline:
 *
 *   slot = [u32 keyLength ‖ key]  (objects)  ‖  0x00 ‖ u32 length ‖ canonical JSON   (inline leaf)
 *                                             |  0x01 ‖ 32-byte hash                  (anything else)
 *
 * so a chunk is checked against its key alone: replace each inline leaf by its leaf hash and
 * hash the result. Chunks come out children first, so a writer that puts them in order never
 * stores a chunk naming one that is not there yet; a chunk already stored then means its
 * whole subtree is, which is what `skip` relies on.
 */

export interface Chunk {
  hash: string;
  bytes: Uint8Array;
}

const SLOT_INLINE = 0x00;
const SLOT_HASH = 0x01;

const childOf = (kind: Kind, level: number, e: Level['entries'][number]): VNode | undefined =>
  level > 0 ? undefined : kind === Kind.Array ? (e as VNode) : (e as ObjectEntry).child;

const encodePage = (
  kind: Kind,
  tree: SeqTree,
  level: number,
  from: number,
  to: number,
  rootCount: number | undefined,
): Uint8Array => {
  // Canonical JSON of inline children first: the writer's buffer is shared.
  const { entries } = tree.levels[level] as Level;
  const inline: Array<Buffer | undefined> = [];
  for (let j = from; j < to; j++) {
    const child = childOf(kind, level, entries[j] as Level['entries'][number]);
    inline.push(
      child && isInline(child) ? Buffer.from(canonicalJson(child.value), 'utf8') : undefined,
    );
  }
  const object = kind === Kind.Object;
  const root = rootCount !== undefined;
  const w = writer(
    object ? (root ? TAG.objectRoot : TAG.objectPage) : root ? TAG.arrayRoot : TAG.arrayPage,
  );
  if (root) w.u64(rootCount);
  w.u8(level);
  for (let j = from; j < to; j++) {
    const e = entries[j] as Level['entries'][number];
    if (object) {
      const key = level > 0 ? ((e as PageEntry).key as Buffer) : (e as ObjectEntry).keyBytes;
      w.u32(key.length);
      w.bytes(key);
    }
    const jcs = inline[j - from];
    if (jcs !== undefined) {
      w.u8(SLOT_INLINE);
      w.u32(jcs.length);
      w.bytes(jcs);
    } else {
      w.u8(SLOT_HASH);
      const child = childOf(kind, level, e);
      w.bytes(child ? child.hash : (e as PageEntry).hash);
    }
  }
  return w.copy();
};

function* nodeChunks(
  node: VNode,
  skip: (hash: string) => boolean,
  withBytes: boolean,
): Generator<Chunk> {
  const hash = toHex(node.hash);
  if (skip(hash)) return;
  const none = new Uint8Array(0);
  if (node.kind === Kind.Leaf) {
    if (!withBytes) return yield { hash, bytes: none };
    const w = writer(TAG.leaf);
    w.utf8(canonicalJson(node.value), node.size);
    return yield { hash, bytes: w.copy() };
  }
  if (node.kind === Kind.String) {
    const bytes = withBytes ? Buffer.from(JSON.stringify(node.value), 'utf8') : undefined;
    const pages = node.pages as Buffer[];
    for (const [i, page] of pages.entries()) {
      const pageHash = toHex(page);
      if (skip(pageHash)) continue;
      if (!bytes) {
        yield { hash: pageHash, bytes: none };
        continue;
      }
      const w = writer(TAG.stringPage);
      w.bytes(bytes.subarray(i * STRING_PAGE, (i + 1) * STRING_PAGE));
      yield { hash: pageHash, bytes: w.copy() };
    }
    if (!withBytes) return yield { hash, bytes: none };
    const w = writer(TAG.stringRoot);
    w.u64(node.size);
    for (const page of pages) w.bytes(page);
    return yield { hash, bytes: w.copy() };
  }
  const tree = node.tree as SeqTree;
  const top = tree.levels.length - 1;
  yield* pageChunks(node.kind, tree, top, 0, node, skip, withBytes);
}

function* pageChunks(
  kind: Kind,
  tree: SeqTree,
  level: number,
  page: number,
  root: VNode | undefined,
  skip: (hash: string) => boolean,
  withBytes: boolean,
): Generator<Chunk> {
  const hash = root
    ? toHex(root.hash)
    : toHex(((tree.levels[level + 1] as Level).entries[page] as PageEntry).hash);
  if (!root && skip(hash)) return;
  const { entries, ends } = tree.levels[level] as Level;
  const from = page === 0 ? 0 : (ends[page - 1] as number);
  const to = ends[page] as number;
  for (let j = from; j < to; j++) {
    if (level > 0) {
      yield* pageChunks(kind, tree, level - 1, j, undefined, skip, withBytes);
      continue;
    }
    const child = childOf(kind, 0, entries[j] as Level['entries'][number]) as VNode;
    if (!isInline(child)) yield* nodeChunks(child, skip, withBytes);
  }
  const count = root ? (tree.levels[0] as Level).entries.length : undefined;
  const bytes = withBytes ? encodePage(kind, tree, level, from, to, count) : new Uint8Array(0);
  yield { hash, bytes };
}

/**
 * The chunks of a settled tree, children first. `skip(hash)` true for a chunk already stored
 * skips it and its whole subtree (a base snapshot writes only what is new).
 */
export const listChunks = (node: VNode, skip: (hash: string) => boolean = () => false): Chunk[] => [
  ...nodeChunks(node, skip, true),
];

/** Hashes of every chunk of a settled tree (for reference records), without encoding any. */
export const chunkHashes = (node: VNode): string[] =>
  [...nodeChunks(node, () => false, false)].map((c) => c.hash);

/** A value to upload before a `ref` op: its chunks and the ref that names them. */
export const chunksOfValue = (value: JsonValue): { ref: ChunkRef; chunks: Chunk[] } => {
  const [node] = build(value, 0);
  return { ref: { hash: toHex(node.hash), size: node.size }, chunks: listChunks(node) };
};

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
