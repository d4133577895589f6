import { canonicalJson, type JsonValue } from '../canonical.js';
import type { JsonObject } from '../state.js';
import type { ParsedChunk, Slot } from './chunk-parse.js';
import { INLINE_MAX, MAX_DEPTH, STRING_PAGE, TAG, toHex } from './format.js';
import { MerkleState } from './merkle-state.js';
import { containerNode, containerNodePaced, keyJcs, objectEntry } from './node.js';
import type { ResolvedValue } from './ops.js';
import { isContainer } from './pointer.js';
import { decodeString } from './read-string.js';
import {
  bad,
  type ChunkSource,
  type Context,
  contextOf,
  fetchChunk,
  inBatches,
  parseJson,
  type ReadOptions,
  utf8,
} from './source.js';
import { type ContainerKind, Kind, type ObjectEntry, type VNode } from './types.js';

/**
 * Reading a state, a value or a path from chunks fetched by hash. Every chunk is checked
 * against its hash before use; a full read also checks that the tree is the canonical one
 * for its value (leaves in canonical JSON, the right node kinds for their sizes, pages cut
 * where the rules cut them), so the tree it rebuilds is exactly the one `build` would make
 * and later deltas hash it incrementally to the digests a fresh build gives. Reads by path
 * fetch only the chunks on the path. Children are fetched concurrently: bound the source
 * (`boundedSource`) to bound the requests in flight.
 */

/** A leaf node from its canonical JSON (checked canonical unless trusted) and its hash. */
export const leafOf = (ctx: Context, jcs: Uint8Array, hash: Buffer): VNode => {
  const size = jcs.length;
  let value: JsonValue;
  if (ctx.canonical) {
    let text = '';
    [value, text] = parseJson(jcs);
    let canonical = '';
    try {
      canonical = canonicalJson(value);
    } catch {
      bad('a leaf is not canonical JSON');
    }
    if (canonical !== text) bad('a leaf is not canonical JSON');
  } else {
    value = parseTrusted(jcs);
  }
  if (size > STRING_PAGE || (size > INLINE_MAX && isContainer(value))) bad('a leaf is too large');
  return { kind: Kind.Leaf, hash: Buffer.from(hash), size, value };
};

/** JSON of a chunk that hashes to a trusted digest: valid UTF-8 and JSON by construction. */
const parseTrusted = (jcs: Uint8Array): JsonValue => {
  try {
    return JSON.parse(Buffer.from(jcs.buffer, jcs.byteOffset, jcs.byteLength).toString('utf8'));
  } catch {
    return bad('a leaf is not JSON');
  }
};

/** Level-0 slots of a container, fetching its pages (concurrently) below the root. */
export const slotsOf = async (
  ctx: Context,
  parsed: ParsedChunk,
  pageTag: number,
): Promise<Slot[]> => {
  if (!('slots' in parsed)) return bad('a container page is not a page');
  if (parsed.level === 0) return parsed.slots;
  const pages = await inBatches(ctx, parsed.slots, async (slot) => {
    const { parsed: page } = await fetchChunk(ctx, toHex(slot.hash));
    if (page.tag !== pageTag || !('slots' in page) || page.level !== parsed.level - 1) {
      bad('a page is out of place');
    }
    return slotsOf(ctx, page, pageTag);
  });
  return pages.flat();
};

export const setMember = (target: JsonObject, key: string, value: JsonValue): void => {
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else target[key] = value;
};

/**
 * The container node of `kind` over its decoded `slots` and their `children` (in slot order):
 * its JSON value, entries and JCS sizes; an object's keys must be UTF-8 and in order. The
 * caller checks the node's hash against the one it was read by.
 */
export const assembleContainer = (kind: ContainerKind, slots: Slot[], children: VNode[]): VNode => {
  const parts = new Parts(kind);
  parts.add(slots, children, 0, children.length);
  return containerNode(parts.value, kind, parts.entries, parts.size, parts.sum);
};

/** Entries assembled between two calls of `pause` (an object entry hashes its key's rank). */
const ENTRIES_PER_PAUSE = 256;

/** `assembleContainer`, awaiting `pause` every few hundred entries and while hashing pages. */
const assembleContainerPaced = async (
  kind: ContainerKind,
  slots: Slot[],
  children: VNode[],
  pause: () => Promise<void> | undefined,
): Promise<VNode> => {
  const parts = new Parts(kind);
  for (let from = 0; from < children.length; from += ENTRIES_PER_PAUSE) {
    for (let turn = pause(); turn; turn = pause()) await turn;
    parts.add(slots, children, from, Math.min(children.length, from + ENTRIES_PER_PAUSE));
  }
  return containerNodePaced(parts.value, kind, parts.entries, parts.size, parts.sum, pause);
};

/** A container's JSON value, entries and sizes, assembled a range of slots at a time. */
class Parts {
  readonly value: JsonValue[] | JsonObject;
  readonly entries: VNode[] | ObjectEntry[];
  sum = 0;
  #previous: string | undefined;

  constructor(readonly kind: ContainerKind) {
    this.value = kind === Kind.Array ? [] : {};
    this.entries = [];
  }

  get size(): number {
    return 2 + this.sum + this.entries.length - 1;
  }

  add(slots: Slot[], children: VNode[], from: number, to: number): void {
    if (this.kind === Kind.Array) {
      const value = this.value as JsonValue[];
      const entries = this.entries as VNode[];
      for (let i = from; i < to; i++) {
        const child = children[i] as VNode;
        this.sum += child.size;
        value.push(child.value);
        entries.push(child);
      }
      return;
    }
    const value = this.value as JsonObject;
    const entries = this.entries as ObjectEntry[];
    for (let i = from; i < to; i++) {
      let key = '';
      try {
        key = utf8.decode((slots[i] as Slot).key);
      } catch {
        bad('a key is not UTF-8');
      }
      if (this.#previous !== undefined && !(this.#previous < key)) bad('keys are not in order');
      this.#previous = key;
      const child = children[i] as VNode;
      const keySize = Buffer.byteLength(keyJcs(key), 'utf8');
      entries.push(objectEntry(key, keySize, child));
      setMember(value, key, child.value);
      this.sum += keySize + 1 + child.size;
    }
  }
}

const decodeContainer = async (
  ctx: Context,
  hash: Buffer,
  parsed: Extract<ParsedChunk, { slots: Slot[] }>,
  depth: number,
): Promise<VNode> => {
  const kind = parsed.tag === TAG.arrayRoot ? Kind.Array : Kind.Object;
  const slots = await slotsOf(ctx, parsed, kind === Kind.Array ? TAG.arrayPage : TAG.objectPage);
  if (slots.length !== parsed.count) bad('a container holds another count of entries');
  const children = await inBatches(ctx, slots, async (slot) => {
    if (slot.inline === undefined) return decodeNode(ctx, slot.hash, depth + 1, false);
    if (slot.inline.length > INLINE_MAX) bad('an inline leaf is too large');
    return leafOf(ctx, slot.inline, slot.hash);
  });
  const node = ctx.pause
    ? await assembleContainerPaced(kind, slots, children, ctx.pause)
    : assembleContainer(kind, slots, children);
  if (node.size <= INLINE_MAX) bad('a small container is stored as a node');
  if (!node.hash.equals(hash)) bad('a container is not paged canonically');
  return node;
};

/** The node stored under `hash`; `standalone`: a root or a ref, which may be a small leaf. */
const decodeNode = async (
  ctx: Context,
  hash: Buffer,
  depth: number,
  standalone: boolean,
): Promise<VNode> => {
  // MAX_DEPTH bounds containers, as building does: a leaf may sit below one at MAX_DEPTH.
  if (depth > MAX_DEPTH + 1) bad(`the state nests deeper than ${MAX_DEPTH}`);
  const { parsed } = await fetchChunk(ctx, toHex(hash));
  if (parsed.tag === TAG.leaf) {
    const node = leafOf(ctx, parsed.jcs, hash);
    if (!standalone && node.size <= INLINE_MAX) bad('a small leaf is stored apart');
    return node;
  }
  if (parsed.tag === TAG.stringRoot) return decodeString(ctx, hash, parsed);
  if (parsed.tag === TAG.arrayRoot || parsed.tag === TAG.objectRoot) {
    if (depth > MAX_DEPTH) bad(`the state nests deeper than ${MAX_DEPTH}`);
    return decodeContainer(ctx, hash, parsed, depth);
  }
  return bad('a page stands where a value should');
};

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
