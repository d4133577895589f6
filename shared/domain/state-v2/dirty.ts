import { canonicalJson, type JsonValue } from '../canonical.js';
import type { JsonObject } from '../state.js';
import { INLINE_MAX, keyRank, leafHash } from './format.js';
import { keyJcs, objectEntry, scalarJcs } from './node.js';
import { isContainer } from './pointer.js';
import { rootHash, settle, widen } from './seq-tree.js';
import { type ContainerKind, Kind, type Level, type ObjectEntry, type VNode } from './types.js';

/**
 * The bookkeeping of MerkleState (merkle-state.ts): ops mark the containers they change as
 * dirty, with the level-0 window of their edits and the children that changed in place;
 * `settleNode` later brings hashes and sizes up to date, children first. Sizes of dirty
 * children are kept out of their parent's `childSum` until they are settled.
 */

export const EMPTY_HASH = Buffer.alloc(0);

export const entriesOf = (node: VNode) =>
  ((node.tree as { levels: Level[] }).levels[0] as Level).entries;

export const childAt = (node: VNode, pos: number): VNode =>
  node.kind === Kind.Array
    ? (entriesOf(node)[pos] as VNode)
    : (entriesOf(node)[pos] as ObjectEntry).child;

/** Position of `key` among sorted entries, or the position it would be inserted at. */
export const findKey = (entries: ObjectEntry[], key: string): [number, boolean] => {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const k = (entries[mid] as ObjectEntry).key;
    if (k === key) return [mid, true];
    if (k < key) lo = mid + 1;
    else hi = mid;
  }
  return [lo, false];
};

/** A leaf child of an expanded container: its size now, its hash only if it is needed. */
export const sizedLeaf = (value: JsonValue): VNode => {
  const jcs = isContainer(value) ? canonicalJson(value) : scalarJcs(value);
  return { kind: Kind.Leaf, hash: EMPTY_HASH, size: Buffer.byteLength(jcs, 'utf8'), value };
};

export const dirtyOf = (node: VNode) => {
  node.dirty ??= { fresh: false, children: new Set(), window: undefined };
  return node.dirty;
};

/**
 * Turns a leaf holding a container into a container node whose children are leaves (it is
 * at most INLINE_MAX bytes, so they are too), so an op can edit it like any container. If it
 * is still small when settled it becomes a leaf again.
 */
export const expand = (node: VNode): void => {
  const value = node.value as JsonValue[] | JsonObject;
  let sum = 0;
  let entries: VNode[] | ObjectEntry[];
  if (Array.isArray(value)) {
    entries = value.map(sizedLeaf);
    for (const e of entries) sum += e.size;
  } else {
    entries = Object.keys(value)
      .sort()
      .map((key) => {
        const keySize = Buffer.byteLength(keyJcs(key), 'utf8');
        const child = sizedLeaf(value[key] as JsonValue);
        sum += keySize + 1 + child.size;
        return objectEntry(key, keySize, child, false);
      });
  }
  node.kind = Array.isArray(value) ? Kind.Array : Kind.Object;
  node.tree = { levels: [{ entries, ends: [] }] };
  node.childSum = sum;
  node.dirty = { fresh: true, children: new Set(), window: undefined };
};

export const removed = (parent: VNode, child: VNode, keySize?: number): void => {
  const dirty = dirtyOf(parent);
  if (!dirty.children.delete(child)) parent.childSum = (parent.childSum as number) - child.size;
  if (keySize !== undefined) parent.childSum = (parent.childSum as number) - keySize - 1;
};

export const added = (parent: VNode, child: VNode, keySize?: number): void => {
  parent.childSum =
    (parent.childSum as number) + child.size + (keySize === undefined ? 0 : keySize + 1);
};

/** Marks `child` (at level-0 position `pos` of `parent`) as changed in place. */
export const touched = (parent: VNode, pos: number, child: VNode): void => {
  const dirty = dirtyOf(parent);
  if (!dirty.children.has(child)) {
    dirty.children.add(child);
    parent.childSum = (parent.childSum as number) - child.size;
  }
  dirty.window = widen(dirty.window, pos, 1, 1);
};

/** Brings a dirty node's hash and size up to date (children first). */
export const settleNode = (node: VNode): void => {
  const dirty = node.dirty;
  if (dirty === undefined) return;
  node.dirty = undefined;
  for (const child of dirty.children) {
    settleNode(child);
    node.childSum = (node.childSum as number) + child.size;
  }
  const entries = entriesOf(node);
  const kind = node.kind as ContainerKind;
  node.size = 2 + (node.childSum as number) + Math.max(0, entries.length - 1);
  if (node.size <= INLINE_MAX) {
    node.kind = Kind.Leaf;
    node.hash = leafHash(canonicalJson(node.value), node.size);
    node.tree = undefined;
    node.childSum = undefined;
    return;
  }
  const [from, to] = dirty.fresh ? [0, entries.length] : (dirty.window ?? [0, 0]);
  for (let j = from; j < to; j++) {
    const e = entries[j];
    const child = kind === Kind.Array ? (e as VNode) : (e as ObjectEntry).child;
    if (child.hash.length === 0) child.hash = leafHash(canonicalJson(child.value), child.size);
    if (kind === Kind.Object && (e as ObjectEntry).rank < 0) {
      (e as ObjectEntry).rank = keyRank((e as ObjectEntry).keyBytes);
    }
  }
  if (dirty.fresh || dirty.window !== undefined) {
    settle(kind, node.tree as NonNullable<VNode['tree']>, dirty.window ?? [0, 0, 0]);
  }
  node.hash = rootHash(kind, node.tree as NonNullable<VNode['tree']>);
};
