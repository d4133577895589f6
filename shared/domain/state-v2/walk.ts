import type { JsonValue } from '../canonical.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { type ParsedChunk, preimageOf, type Slot } from './chunk-parse.js';
import { ARRAY_FANOUT, TAG, toHex, writer } from './format.js';
import { existingIndex, splitPointer, valueAt } from './pointer.js';
import { readValue } from './read.js';
import {
  bad,
  type ChunkSource,
  type Context,
  contextOf,
  fetchChunk,
  parseJson,
  type ReadOptions,
  utf8,
} from './source.js';

/**
 * Reads by path (`?path=/messages/3`): from the root chunk down to the value, reading only
 * the chunks on the path, each checked against its hash; the hash inputs met on the way are
 * the nodes of the path's proof (proof.ts).
 */

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
