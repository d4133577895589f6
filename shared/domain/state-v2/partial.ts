import { canonicalJson, type JsonValue } from '../canonical.js';
import { NotFoundError } from '../errors.js';
import type { JsonObject } from '../state.js';
import { childAt, entriesOf, findKey } from './dirty.js';
import { INLINE_MAX, TAG, toHex, writer } from './format.js';
import { MerkleState } from './merkle-state.js';
import type { StateOp } from './ops.js';
import { escapeSegment, existingIndex, splitPointer, valueAt } from './pointer.js';
import { proveState, type StateProof } from './proof.js';
import { assembleContainer, leafOf, readValue, setMember, slotsOf } from './read.js';
import { pageOf, pagePreimage, rootPreimage } from './seq-tree.js';
import { bad, type ChunkSource, contextOf, fetchChunk, type ReadOptions } from './source.js';
import { type ContainerKind, Kind, type Level, type ObjectEntry, type VNode } from './types.js';
import { walk } from './walk.js';

/**
 * A partial state (docs/state-v2.md, "Reads by path and proofs"): the Merkle tree of a state
 * stored as chunks, loaded only where ops and reads go, so the deltas after a base apply to it
 * and re-hash to their recorded digests without reading the rest of the state.
 *
 * A child stored apart (a node of its own, above INLINE_MAX) starts as a stub: its hash and
 * a nominal size, no value. Before an op applies, every container on its path is loaded one
 * level deep (its root and pages: its level-0 entries, children stored apart as stubs), which
 * is all MerkleState needs to edit it and re-cut its pages; container hashes cover entries'
 * hashes, never sizes. Sizes stay lower bounds wherever a stub lies below (a stub is above
 * INLINE_MAX, and so are its holders), so no node is turned into a leaf that should not be,
 * and wherever no stub lies below they are exact. The JSON beside the tree holds `null` in
 * place of a stub's value: reads go through `provePartial`, which reads a stub's chunks.
 */

const stubs = new WeakSet<VNode>();
const STUB_SIZE = INLINE_MAX + 1;

const stub = (hash: Buffer): VNode => {
  const node: VNode = { kind: Kind.Leaf, hash: Buffer.from(hash), size: STUB_SIZE, value: null };
  stubs.add(node);
  return node;
};

/** A stored node loaded one level deep; undefined when it is not a container. */
const loadShallow = async (
  source: ChunkSource,
  hash: Buffer,
  options: ReadOptions,
): Promise<VNode | undefined> => {
  const ctx = contextOf(source, options);
  const { parsed } = await fetchChunk(ctx, toHex(hash));
  if (parsed.tag !== TAG.arrayRoot && parsed.tag !== TAG.objectRoot) return undefined;
  const kind: ContainerKind = parsed.tag === TAG.arrayRoot ? Kind.Array : Kind.Object;
  const slots = await slotsOf(ctx, parsed, kind === Kind.Array ? TAG.arrayPage : TAG.objectPage);
  if (slots.length !== parsed.count) bad('a container holds another count of entries');
  const children = slots.map((s) =>
    s.inline === undefined ? stub(s.hash) : leafOf(ctx, s.inline, s.hash),
  );
  const node = assembleContainer(kind, slots, children);
  if (!node.hash.equals(hash)) bad('a container is not paged canonically');
  return node;
};

/** The state `digest` with only its root container loaded. */
export const loadPartial = async (
  digest: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<MerkleState> => {
  const root = await loadShallow(source, Buffer.from(digest, 'hex'), options);
  if (root) return MerkleState.fromNode(root);
  // A small state is one leaf chunk: the whole state.
  const ctx = contextOf(source, options);
  const { parsed } = await fetchChunk(ctx, digest);
  if (parsed.tag !== TAG.leaf) return bad('a state is not an object');
  return MerkleState.fromNode(leafOf(ctx, parsed.jcs, Buffer.from(digest, 'hex')));
};

/** Position of `segment` in a container node, if it holds it. */
const positionOf = (node: VNode, segment: string): number | undefined => {
  const entries = entriesOf(node);
  if (node.kind === Kind.Array) return existingIndex(segment, entries.length);
  const [pos, found] = findKey(entries as ObjectEntry[], segment);
  return found ? pos : undefined;
};

/** Loads the stubs on `segments` (the containers an op walks through), in place. */
const loadAlong = async (
  state: MerkleState,
  segments: string[],
  source: ChunkSource,
  options: ReadOptions,
): Promise<boolean> => {
  let node = state.root();
  for (const segment of segments) {
    if (node.kind !== Kind.Array && node.kind !== Kind.Object) return true;
    const pos = positionOf(node, segment);
    if (pos === undefined) return true;
    let child = childAt(node, pos);
    if (stubs.has(child)) {
      const loaded = await loadShallow(source, child.hash, options);
      if (!loaded) return false; // an op would go through a scalar: not a recorded delta
      loaded.size = child.size; // the holder counted the stub's size: keep them in step
      if (node.kind === Kind.Array) {
        (entriesOf(node) as VNode[])[pos] = loaded;
        (node.value as JsonValue[])[pos] = loaded.value;
      } else {
        const entry = (entriesOf(node) as ObjectEntry[])[pos] as ObjectEntry;
        entry.child = loaded;
        setMember(node.value as JsonObject, segment, loaded.value);
      }
      child = loaded;
    }
    node = child;
  }
  return true;
};

/**
 * Applies ops to a partial state, loading what each op walks through first; false when an op
 * walks into a stored scalar (the caller hydrates instead). Throws as MerkleState.apply does.
 */
export const applyPartial = async (
  state: MerkleState,
  ops: readonly StateOp[],
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<boolean> => {
  for (const op of ops) {
    const segments = typeof op.path === 'string' ? splitPointer(op.path) : undefined;
    if (segments && !(await loadAlong(state, segments.slice(0, -1), source, options))) {
      return false;
    }
    state.apply([op]);
  }
  return true;
};

const pointerOf = (segments: string[]) => segments.map((s) => `/${escapeSegment(s)}`).join('');

/** The whole value of a node, reading the chunks of the stubs under it. */
const wholeValue = async (
  node: VNode,
  source: ChunkSource,
  options: ReadOptions,
): Promise<JsonValue> => {
  if (stubs.has(node)) return (await readValue(toHex(node.hash), source, options)).node.value;
  if (node.kind !== Kind.Array && node.kind !== Kind.Object) return node.value;
  const entries = entriesOf(node);
  if (node.kind === Kind.Array) {
    return Promise.all((entries as VNode[]).map((e) => wholeValue(e, source, options)));
  }
  const value: JsonObject = {};
  const values = await Promise.all(
    (entries as ObjectEntry[]).map((e) => wholeValue(e.child, source, options)),
  );
  for (const [i, e] of (entries as ObjectEntry[]).entries()) {
    setMember(value, e.key, values[i] as JsonValue);
  }
  return value;
};

/** The proof of `path` of a partial state: its loaded nodes, then the chunks under a stub. */
export const provePartial = async (
  state: MerkleState,
  path: string,
  source: ChunkSource,
  options: ReadOptions = {},
): Promise<StateProof> => {
  const segments = splitPointer(path);
  if (segments === undefined) return proveState(state, path); // its error
  const digest = state.digest();
  const nodes: string[] = [];
  let node = state.root();
  const done = (value: JsonValue): StateProof => ({ v: 2, digest, path, value, nodes });
  for (let i = 0; ; i++) {
    if (stubs.has(node)) {
      const rest = pointerOf(segments.slice(i));
      if (rest === '') return done(await wholeValue(node, source, options));
      const w = await walk(toHex(node.hash), rest, source, options);
      nodes.push(...w.nodes.map((n) => n.toString('base64')));
      const end = w.end;
      if ('value' in end) return done(end.value);
      return done((await readValue(end.hash, source, options)).node.value);
    }
    if (i === segments.length) return done(await wholeValue(node, source, options));
    if (node.kind !== Kind.Array && node.kind !== Kind.Object) {
      // A leaf holds its JSON whole (its hash input is the last node); a string holds no path.
      const value = node.kind === Kind.Leaf ? valueAt(node.value, segments.slice(i)) : undefined;
      if (value === undefined) throw new NotFoundError(`the state holds no value at ${path}`);
      const w = writer(TAG.leaf);
      w.utf8(canonicalJson(node.value), node.size);
      nodes.push(w.copy().toString('base64'));
      return done(value);
    }
    const kind = node.kind as ContainerKind;
    const tree = node.tree as { levels: Level[] };
    const pos = positionOf(node, segments[i] as string);
    if (pos === undefined) throw new NotFoundError(`the state holds no value at ${path}`);
    const top = tree.levels.length - 1;
    const pages: number[] = [];
    for (let level = 0, at = pos; level < top; level++) {
      at = pageOf((tree.levels[level] as Level).ends, at);
      pages.push(at);
    }
    nodes.push(rootPreimage(kind, tree).copy().toString('base64'));
    for (let level = top - 1; level >= 0; level--) {
      nodes.push(
        pagePreimage(kind, tree, level, pages[level] as number)
          .copy()
          .toString('base64'),
      );
    }
    node = childAt(node, pos);
  }
};
