import { InvalidFormatError, InvalidInputError } from '../errors.js';
import { HASH_BYTES } from '../hashing.js';
import { EMPTY_ROOT, hashToHex, hexToHash, nodeHash } from './hash.js';
import { checkSize, type NodeId, popcount, rangeNodes } from './shape.js';

/**
 * The right edge of a tree of size n: the roots of the perfect subtrees D[0:n] splits into,
 * largest first (one per set bit of n). It is all an appender needs: appending a leaf merges
 * equal-sized subtrees at the end (a binary carry), and the root is their right-to-left fold.
 * The head record carries it as `frontier` (docs/records-v2.md), so an append costs O(log n)
 * hashes and no storage request.
 */
export type Frontier = readonly Uint8Array[];

/** Which perfect subtree each frontier entry is the root of, largest first. */
export const frontierNodes = (size: number): NodeId[] => rangeNodes(0, checkSize(size, 'size'));

const checkFrontier = (frontier: Frontier, size: number): void => {
  if (frontier.length !== popcount(size)) {
    throw new InvalidFormatError(
      `a frontier of tree size ${size} has ${popcount(size)} hashes, not ${frontier.length}`,
    );
  }
};

/** The frontier after appending one leaf hash to a tree of `size` leaves. Never mutates. */
export const appendLeaf = (frontier: Frontier, size: number, leaf: Uint8Array): Uint8Array[] => {
  checkSize(size, 'size');
  checkFrontier(frontier, size);
  if (leaf.length !== HASH_BYTES) throw new InvalidInputError('a leaf hash has 32 bytes');
  const next = frontier.slice();
  let carry = leaf;
  // Each trailing 1 bit of size is a subtree of the same size as the carry: merge them.
  for (let s = size; s % 2 === 1; s = (s - 1) / 2) {
    const left = next.pop();
    if (left === undefined) throw new InvalidFormatError('frontier shorter than its size');
    carry = nodeHash(left, carry);
  }
  next.push(carry);
  return next;
};

/** The frontier after appending `leaves` in order. */
export const extendFrontier = (
  frontier: Frontier,
  size: number,
  leaves: readonly Uint8Array[],
): Uint8Array[] => {
  let next = frontier.slice();
  let n = size;
  for (const leaf of leaves) {
    next = appendLeaf(next, n, leaf);
    n += 1;
  }
  return next;
};

/**
 * MTH of a run of perfect subtrees, largest first, that tile a range of an RFC tree (a
 * frontier, or the pieces `rangeNodes` returns): fold from the right, as the RFC's left-
 * balanced split nests them. An empty run is the empty tree.
 */
export const foldRange = (roots: readonly Uint8Array[]): Uint8Array => {
  let acc = roots[roots.length - 1];
  if (acc === undefined) return EMPTY_ROOT;
  for (let i = roots.length - 2; i >= 0; i--) acc = nodeHash(roots[i] as Uint8Array, acc);
  return acc;
};

/** The root hash (MTH) of the tree whose frontier this is. */
export const frontierRoot = (frontier: Frontier, size: number): Uint8Array => {
  checkFrontier(frontier, size);
  return foldRange(frontier);
};

/** The head record's form: 64-hex strings. */
export const frontierToHex = (frontier: Frontier): string[] => frontier.map(hashToHex);

/** Parses the head record's `frontier` for tree size `size` (fail closed on any defect). */
export const frontierFromHex = (hex: unknown, size: number): Uint8Array[] => {
  checkSize(size, 'treeSize');
  if (!Array.isArray(hex)) throw new InvalidFormatError('frontier is not an array');
  const frontier = hex.map((h, i) => hexToHash(h, `frontier[${i}]`));
  checkFrontier(frontier, size);
  return frontier;
};

/**
 * The perfect subtrees of level >= `minLevel` that appending `leaves` to a tree of `size`
 * completes: exactly those whose last leaf is one of the new ones (end in (size, size +
 * leaves.length]), in level order, then index order. Their positions follow from the two
 * sizes alone (`completedNodeIds`), so a list of hashes is all that needs storing.
 */
export const completedNodes = (
  frontier: Frontier,
  size: number,
  leaves: readonly Uint8Array[],
  minLevel: number,
): Uint8Array[] => {
  checkSize(size, 'size');
  checkFrontier(frontier, size);
  const stack = frontierNodes(size).map((node, i) => ({
    level: node.level,
    hash: frontier[i] as Uint8Array,
  }));
  const byLevel: Uint8Array[][] = [];
  const keep = (level: number, hash: Uint8Array) => {
    if (level < minLevel) return;
    byLevel[level] ??= [];
    byLevel[level].push(hash);
  };
  for (const leaf of leaves) {
    let carry = { level: 0, hash: leaf };
    keep(0, leaf);
    while (stack.length > 0 && stack[stack.length - 1]?.level === carry.level) {
      const left = stack.pop() as { level: number; hash: Uint8Array };
      carry = { level: carry.level + 1, hash: nodeHash(left.hash, carry.hash) };
      keep(carry.level, carry.hash);
    }
    stack.push(carry);
  }
  return byLevel.flatMap((row) => row ?? []);
};

/** The ids of `completedNodes(…, size, leaves of to − size, minLevel)`, in the same order. */
export const completedNodeIds = (from: number, to: number, minLevel: number): NodeId[] => {
  checkSize(from, 'from');
  checkSize(to, 'to');
  const ids: NodeId[] = [];
  for (let level = minLevel, width = 2 ** minLevel; width <= to; level++, width *= 2) {
    for (let index = Math.floor(from / width); index < Math.floor(to / width); index++) {
      ids.push({ level, index });
    }
  }
  return ids;
};
