import { canonicalJson, type JsonValue } from '../canonical.js';
import {
  InvalidFormatError,
  InvalidInputError,
  NotFoundError,
  TamperedLedgerError,
} from '../errors.js';
import type { JsonObject } from '../state.js';
import { type ParsedChunk, preimageOf, type Slot, verifyChunk } from './chunks.js';
import { ARRAY_FANOUT, INLINE_MAX, MAX_DEPTH, STRING_PAGE, TAG, toHex, writer } from './format.js';
import { MerkleState } from './merkle-state.js';
import { containerNode, keyJcs, objectEntry } from './node.js';
import type { ResolvedValue } from './ops.js';
import { existingIndex, isBanned, isContainer, splitPointer, valueAt } from './pointer.js';
import { Kind, type ObjectEntry, type VNode } from './types.js';

/**
 * Reading a state, a value or a path from chunks fetched by hash. Every chunk is checked
 * against its hash before use; a full read also checks that the tree is the canonical one
 * for its value (leaves in canonical JSON, the right node kinds for their sizes, pages cut
 * where the rules cut them), so the tree it rebuilds is exactly the one `build` would make
 * and later deltas hash it incrementally to the digests a fresh build gives. Reads by path
 * fetch only the chunks on the path. Children are fetched concurrently: bound the source
 * (`boundedSource`) to bound the requests in flight.
 */

/** Fetches a chunk's bytes by its hash (hex); undefined when it is not stored. */
export type ChunkSource = (hash: string) => Promise<Uint8Array | undefined>;

export interface ReadOptions {
  /** Seq of the state being read, for the error when a chunk is missing or tampered. */
  seq?: number;
}

interface Context {
  source: ChunkSource;
  seq: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

const bad = (why: string): never => {
  throw new InvalidFormatError(`state chunks: ${why}`);
};

const fetchChunk = async (ctx: Context, hash: string) => {
  const bytes = await ctx.source(hash);
  if (bytes === undefined) {
    throw new TamperedLedgerError(Math.max(1, ctx.seq), `state chunk ${hash} is missing`);
  }
  try {
    return { bytes, parsed: verifyChunk(bytes, hash) };
  } catch (err) {
    throw new TamperedLedgerError(Math.max(1, ctx.seq), (err as Error).message, { cause: err });
  }
};

const parseJson = (bytes: Uint8Array): [JsonValue, string] => {
  let text = '';
  let value: JsonValue = null;
  try {
    text = utf8.decode(bytes);
    value = JSON.parse(text) as JsonValue;
  } catch {
    bad('a leaf is not JSON');
  }
  return [value, text];
};

/** A leaf node from its canonical JSON (checked canonical) and its verified hash. */
const leafOf = (jcs: Uint8Array, hash: Buffer): VNode => {
  const [value, text] = parseJson(jcs);
  let canonical = '';
  try {
    canonical = canonicalJson(value);
  } catch {
    bad('a leaf is not canonical JSON');
  }
  if (canonical !== text) bad('a leaf is not canonical JSON');
  const size = jcs.length;
  if (size > STRING_PAGE || (size > INLINE_MAX && isContainer(value))) bad('a leaf is too large');
  return { kind: Kind.Leaf, hash: Buffer.from(hash), size, value };
};

/** Level-0 slots of a container, fetching its pages (concurrently) below the root. */
const slotsOf = async (ctx: Context, parsed: ParsedChunk, pageTag: number): Promise<Slot[]> => {
  if (!('slots' in parsed)) return bad('a container page is not a page');
  if (parsed.level === 0) return parsed.slots;
  const pages = await Promise.all(
    parsed.slots.map(async (slot) => {
      const { parsed: page } = await fetchChunk(ctx, toHex(slot.hash));
      if (page.tag !== pageTag || !('slots' in page) || page.level !== parsed.level - 1) {
        bad('a page is out of place');
      }
      return slotsOf(ctx, page, pageTag);
    }),
  );
  return pages.flat();
};

const setMember = (target: JsonObject, key: string, value: JsonValue): void => {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else target[key] = value;
};

const decodeContainer = async (
  ctx: Context,
  hash: Buffer,
  parsed: Extract<ParsedChunk, { slots: Slot[] }>,
  depth: number,
): Promise<VNode> => {
  const kind = parsed.tag === TAG.arrayRoot ? Kind.Array : Kind.Object;
  const slots = await slotsOf(ctx, parsed, kind === Kind.Array ? TAG.arrayPage : TAG.objectPage);
  if (slots.length !== parsed.count) bad('a container holds another count of entries');
  const children = await Promise.all(
    slots.map((slot) => {
      if (slot.inline === undefined) return decodeNode(ctx, slot.hash, depth + 1, false);
      if (slot.inline.length > INLINE_MAX) bad('an inline leaf is too large');
      return leafOf(slot.inline, slot.hash);
    }),
  );
  let sum = 0;
  let node: VNode;
  if (kind === Kind.Array) {
    for (const child of children) sum += child.size;
    const value = children.map((c) => c.value);
    node = containerNode(value, kind, children, 2 + sum + children.length - 1, sum);
  } else {
    const value: JsonObject = {};
    const entries: ObjectEntry[] = [];
    let previous: string | undefined;
    for (const [i, slot] of slots.entries()) {
      let key = '';
      try {
        key = utf8.decode(slot.key);
      } catch {
        bad('a key is not UTF-8');
      }
      if (previous !== undefined && !(previous < key)) bad('keys are not in order');
      previous = key;
      const child = children[i] as VNode;
      const keySize = Buffer.byteLength(keyJcs(key), 'utf8');
      entries.push(objectEntry(key, keySize, child));
      setMember(value, key, child.value);
      sum += keySize + 1 + child.size;
    }
    node = containerNode(value, kind, entries, 2 + sum + entries.length - 1, sum);
  }
  if (node.size <= INLINE_MAX) bad('a small container is stored as a node');
  if (!node.hash.equals(hash)) bad('a container is not paged canonically');
  return node;
};

const decodeString = async (
  ctx: Context,
  hash: Buffer,
  parsed: Extract<ParsedChunk, { tag: typeof TAG.stringRoot }>,
): Promise<VNode> => {
  if (parsed.size <= STRING_PAGE || parsed.pages.length !== Math.ceil(parsed.size / STRING_PAGE)) {
    bad('a long string has the wrong pages');
  }
  const pages = await Promise.all(
    parsed.pages.map(async (page, i) => {
      const { parsed: p } = await fetchChunk(ctx, toHex(page));
      const expected = i < parsed.pages.length - 1 ? STRING_PAGE : parsed.size - i * STRING_PAGE;
      if (p.tag !== TAG.stringPage || p.bytes.length !== expected)
        bad('a string page is out of place');
      return (p as { bytes: Buffer }).bytes;
    }),
  );
  const [value, text] = parseJson(Buffer.concat(pages));
  if (typeof value !== 'string' || JSON.stringify(value) !== text)
    bad('a long string is not canonical');
  return {
    kind: Kind.String,
    hash: Buffer.from(hash),
    size: parsed.size,
    value,
    pages: parsed.pages,
  };
};

/** The node stored under `hash`; `standalone`: a root or a ref, which may be a small leaf. */
const decodeNode = async (
  ctx: Context,
  hash: Buffer,
  depth: number,
  standalone: boolean,
): Promise<VNode> => {
  if (depth > MAX_DEPTH) bad(`the state nests deeper than ${MAX_DEPTH}`);
  const { parsed } = await fetchChunk(ctx, toHex(hash));
  if (parsed.tag === TAG.leaf) {
    const node = leafOf(parsed.jcs, hash);
    if (!standalone && node.size <= INLINE_MAX) bad('a small leaf is stored apart');
    return node;
  }
  if (parsed.tag === TAG.stringRoot) return decodeString(ctx, hash, parsed);
  if (parsed.tag === TAG.arrayRoot || parsed.tag === TAG.objectRoot) {
    return decodeContainer(ctx, hash, parsed, depth);
  }
  return bad('a page stands where a value should');
};

const contextOf = (source: ChunkSource, options: ReadOptions): Context => ({
  source,
  seq: options.seq ?? 0,
});

/** A value by its hash (a `ref`), verified and with its tree, ready for one op. */
export const readValue = async (
  hash: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<ResolvedValue> => ({
  node: await decodeNode(contextOf(source, options), Buffer.from(hash, 'hex'), 1, true),
});

/** The state whose digest is `digest`, with its tree, verified. */
export const readState = async (
  digest: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<MerkleState> =>
  MerkleState.fromNode(
    await decodeNode(contextOf(source, options), Buffer.from(digest, 'hex'), 0, true),
  );

export interface Walk {
  /** Hash inputs of the nodes on the path, root first (the proof's `nodes`). */
  nodes: Buffer[];
  /** Where the path ends: a node to read whole, or a value already in hand. */
  end: { hash: string } | { value: JsonValue };
}

const notFound = (path: string): never => {
  throw new NotFoundError(`the state holds no value at ${path}`);
};

/** `value`, unless it is missing (a JSON null is a value). */
const present = (value: JsonValue | undefined, path: string): JsonValue =>
  value === undefined ? notFound(path) : value;

/** Finds the level-0 slot of `segment` in a container, pushing the pages on the way. */
const descend = async (
  ctx: Context,
  root: Extract<ParsedChunk, { slots: Slot[] }>,
  segment: string,
  nodes: Buffer[],
  path: string,
): Promise<Slot> => {
  const array = root.tag === TAG.arrayRoot;
  let rel = array ? (existingIndex(segment, root.count ?? 0) ?? notFound(path)) : 0;
  const key = Buffer.from(segment, 'utf8');
  let page: Extract<ParsedChunk, { slots: Slot[] }> = root;
  for (;;) {
    let slot: Slot | undefined;
    if (array) {
      const span = ARRAY_FANOUT ** page.level;
      slot = page.slots[Math.floor(rel / span)];
      rel %= span;
    } else if (page.level === 0) {
      slot = page.slots.find((s) => s.key?.equals(key));
    } else {
      slot = page.slots.findLast((s) => utf8.decode(s.key) <= segment);
    }
    if (slot === undefined) return notFound(path);
    if (page.level === 0) return slot;
    const { bytes, parsed } = await fetchChunk(ctx, toHex(slot.hash));
    const pageTag = array ? TAG.arrayPage : TAG.objectPage;
    if (parsed.tag !== pageTag || !('slots' in parsed) || parsed.level !== page.level - 1) {
      bad('a page is out of place');
    }
    nodes.push(preimageOf(bytes, parsed));
    page = parsed as Extract<ParsedChunk, { slots: Slot[] }>;
  }
};

/** Walks `path` through the chunks of the state `digest`, reading only the chunks on it. */
export const walk = async (
  digest: string,
  path: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<Walk> => {
  const segments = splitPointer(path);
  if (segments === undefined) throw new InvalidInputError('path must be a JSON Pointer, like /a/0');
  const ctx = contextOf(source, options);
  const nodes: Buffer[] = [];
  let hash = digest;
  for (let i = 0; ; ) {
    if (i === segments.length) return { nodes, end: { hash } };
    const { bytes, parsed } = await fetchChunk(ctx, hash);
    nodes.push(preimageOf(bytes, parsed));
    if (parsed.tag === TAG.leaf) {
      const value = valueAt(parseJson(parsed.jcs)[0], segments.slice(i));
      return { nodes, end: { value: present(value, path) } };
    }
    if (parsed.tag !== TAG.arrayRoot && parsed.tag !== TAG.objectRoot) return notFound(path);
    if (isBanned(segments, i)) return notFound(path);
    const slot = await descend(ctx, parsed, segments[i] as string, nodes, path);
    i++;
    if (slot.inline === undefined) {
      hash = toHex(slot.hash);
      continue;
    }
    const value = parseJson(slot.inline)[0];
    if (i === segments.length) return { nodes, end: { value } };
    // The path goes on inside an inline leaf: its hash input is the next node of the path.
    const w = writer(TAG.leaf);
    w.bytes(slot.inline);
    nodes.push(w.copy());
    return { nodes, end: { value: present(valueAt(value, segments.slice(i)), path) } };
  }
};

/** The value at `path` of the state `digest`, reading only the chunks on the path (and under it). */
export const readAt = async (
  digest: string,
  path: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<JsonValue> => {
  const { end } = await walk(digest, path, source, options);
  if ('value' in end) return end.value;
  return (await readValue(end.hash, source, options)).node.value;
};

/** A source that lets at most `limit` fetches run at once (S3 GETs, bounded). */
export const boundedSource = (source: ChunkSource, limit: number): ChunkSource => {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (hash) => {
    // A finishing fetch hands its slot straight to the next in line, so none can jump in.
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await source(hash);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
};
