import { InvalidInputError } from '../errors.js';

/**
 * The shape of an RFC 9162 tree, without any hashes: which subtrees a proof is made of.
 *
 * Sizes and indexes go up to 2^53 − 1, so this file uses arithmetic (`/ 2`, `% 2`), never
 * the 32-bit bitwise operators.
 */

/**
 * A perfect subtree: the 2^level leaves starting at leaf `index · 2^level`. Level 0 is a
 * leaf; its hash is the leaf hash. These are the hashes a HashSource (memory, tiles) serves.
 */
export interface NodeId {
  level: number;
  index: number;
}

/** Leaves [start, end): the entries D[start:end] whose MTH is one element of a proof. */
export interface LeafRange {
  start: number;
  end: number;
}

export const isSize = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

export const checkSize = (n: unknown, what: string): number => {
  if (!isSize(n)) throw new InvalidInputError(`${what} must be an integer 0..2^53-1`);
  return n;
};

/** The largest power of two smaller than n (n ≥ 2): the RFC's split point k < n ≤ 2k. */
export const splitPoint = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/** Number of set bits of a size: the length of its frontier. */
export const popcount = (n: number): number => {
  let count = 0;
  for (let x = n; x > 0; x = Math.floor(x / 2)) count += x % 2;
  return count;
};

/**
 * The perfect subtrees that make up D[start:end], left to right: greedily the largest
 * subtree aligned at `start` that fits. For the ranges of an RFC tree (start aligned to a
 * power of two ≥ end − start) this is the binary decomposition of end − start, largest first,
 * and MTH(D[start:end]) is their right-to-left fold (see `foldRange`).
 */
export const rangeNodes = (start: number, end: number): NodeId[] => {
  const nodes: NodeId[] = [];
  let at = start;
  while (at < end) {
    let level = 0;
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 <= end) {
      size *= 2;
      level += 1;
    }
    nodes.push({ level, index: at / size });
    at += size;
  }
  return nodes;
};

/**
 * RFC 9162 §2.1.3.1 PATH(m, D[n]) as leaf ranges, in proof order (the leaf's sibling first).
 * The recursion is walked top-down and the elements come out bottom-up, hence the reverse.
 */
export const inclusionRanges = (leafIndex: number, treeSize: number): LeafRange[] => {
  checkSize(treeSize, 'treeSize');
  checkSize(leafIndex, 'leafIndex');
  if (leafIndex >= treeSize) throw new InvalidInputError('leafIndex must be below treeSize');
  const topDown: LeafRange[] = [];
  let lo = 0;
  let hi = treeSize;
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (leafIndex - lo < k) {
      topDown.push({ start: lo + k, end: hi });
      hi = lo + k;
    } else {
      topDown.push({ start: lo, end: lo + k });
      lo += k;
    }
  }
  return topDown.reverse();
};

/**
 * RFC 9162 §2.1.4.1 PROOF(m, D[n]) = SUBPROOF(m, D[n], true) as leaf ranges, in proof order.
 * `from = 0` and `from = to` have the empty proof (docs/proofs.md).
 */
export const consistencyRanges = (from: number, to: number): LeafRange[] => {
  checkSize(from, 'from');
  checkSize(to, 'to');
  if (from > to) throw new InvalidInputError('from must not exceed to');
  if (from === 0 || from === to) return [];
  const topDown: LeafRange[] = [];
  let lo = 0;
  let hi = to;
  let includeOld = true; // SUBPROOF's b: the old tree's root is known to the verifier
  while (from !== hi) {
    const k = splitPoint(hi - lo);
    if (from - lo <= k) {
      topDown.push({ start: lo + k, end: hi });
      hi = lo + k;
    } else {
      topDown.push({ start: lo, end: lo + k });
      lo += k;
      includeOld = false;
    }
  }
  if (!includeOld) topDown.push({ start: lo, end: hi });
  return topDown.reverse();
};
