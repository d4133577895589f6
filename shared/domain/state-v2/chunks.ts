import { canonicalJson, type JsonValue } from '../canonical.js';
import { SLOT_HASH, SLOT_INLINE, STRING_PAGE, TAG, toHex, writer } from './format.js';
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
    const bytes = withBytes ? stringPages(node.value as string) : undefined;
    const pages = node.pages as Buffer[];
    for (const page of pages) {
      const pageHash = toHex(page);
      const content = bytes?.next().value;
      if (skip(pageHash)) continue;
      if (!content) {
        yield { hash: pageHash, bytes: none };
        continue;
      }
      const w = writer(TAG.stringPage);
      w.bytes(content);
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

/** UTF-16 units of a long string serialized at a time (never splitting a surrogate pair). */
const STRING_SLICE = 64 * 1024;

/**
 * The canonical JSON of a long string, in pages of STRING_PAGE bytes (the last one shorter),
 * serialized a slice at a time: a 64 MiB string is not one 64 MiB serialization. Slices cut
 * between code points serialize to the same bytes as the whole (JSON.stringify escapes per
 * character).
 */
function* stringPages(value: string): Generator<Buffer> {
  let page = Buffer.allocUnsafe(STRING_PAGE);
  let filled = 0;
  const put = function* (bytes: Buffer): Generator<Buffer> {
    for (let at = 0; at < bytes.length; ) {
      const n = Math.min(bytes.length - at, STRING_PAGE - filled);
      bytes.copy(page, filled, at, at + n);
      filled += n;
      at += n;
      if (filled === STRING_PAGE) {
        yield page;
        page = Buffer.allocUnsafe(STRING_PAGE);
        filled = 0;
      }
    }
  };
  yield* put(Buffer.from('"'));
  for (let at = 0; at < value.length; ) {
    let end = Math.min(value.length, at + STRING_SLICE);
    const last = value.charCodeAt(end - 1);
    if (end < value.length && last >= 0xd800 && last <= 0xdbff) end++;
    yield* put(Buffer.from(JSON.stringify(value.slice(at, end)).slice(1, -1), 'utf8'));
    at = end;
  }
  yield* put(Buffer.from('"'));
  if (filled > 0) yield page.subarray(0, filled);
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

/** Each chunk once: a value that occurs twice in a state is one subtree of chunks. */
const once = (skip: (hash: string) => boolean) => {
  const seen = new Set<string>();
  return (hash: string) => {
    if (seen.has(hash) || skip(hash)) return true;
    seen.add(hash);
    return false;
  };
};

/**
 * The chunks of a settled tree, children first, each once, one at a time (a writer that
 * puts them as they come holds a few, not the whole tree, and can take turns of the event
 * loop in between). `skip(hash)` true for a chunk already stored skips it and its whole
 * subtree (a base snapshot writes only what is new).
 */
export const eachChunk = (
  node: VNode,
  skip: (hash: string) => boolean = () => false,
): Generator<Chunk> => nodeChunks(node, once(skip), true);

/** `eachChunk`, without encoding any: only their hashes (bytes empty). */
export const eachChunkHash = (node: VNode): Generator<Chunk> =>
  nodeChunks(
    node,
    once(() => false),
    false,
  );

/** The chunks of `eachChunk`, as a list. */
export const listChunks = (node: VNode, skip: (hash: string) => boolean = () => false): Chunk[] => [
  ...eachChunk(node, skip),
];

/** Hashes of every chunk of a settled tree (for reference records), without encoding any. */
export const chunkHashes = (node: VNode): string[] => [...eachChunkHash(node)].map((c) => c.hash);

/** A value to upload before a `ref` op: its chunks and the ref that names them. */
export const chunksOfValue = (value: JsonValue): { ref: ChunkRef; chunks: Chunk[] } => {
  const [node] = build(value, 0);
  return { ref: { hash: toHex(node.hash), size: node.size }, chunks: listChunks(node) };
};
