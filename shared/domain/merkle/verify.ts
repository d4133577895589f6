import { HASH_BYTES } from '../hashing.js';
import { EMPTY_ROOT, hashesEqual, nodeHash } from './hash.js';
import { isSize } from './shape.js';

/**
 * Proof verification, RFC 9162 §2.1.3.2 (inclusion) and §2.1.4.2 (consistency), with the
 * C2SP merkle-tree rules for the edges this project answers (docs/proofs.md):
 * consistency from 0 and from = to are the empty proof. Pure and synchronous: the client
 * SDK runs this on what a server it does not trust sent.
 *
 * Counters use arithmetic, not `>>`, so sizes past 2^31 work (up to 2^53 − 1).
 */

const half = (x: number): number => Math.floor(x / 2);
const allHashes = (hashes: readonly Uint8Array[]): boolean =>
  hashes.every((h) => h instanceof Uint8Array && h.length === HASH_BYTES);
const odd = (x: number): boolean => x % 2 === 1;

/** The longest path any tree of a safe-integer size can need; longer paths are refused unread. */
export const MAX_PATH_LENGTH = 64;

/**
 * The root an inclusion proof leads to, or undefined when the path cannot be a proof for
 * (leafIndex, treeSize) at all (wrong length, index out of range).
 */
export const rootFromInclusionProof = (
  leaf: Uint8Array,
  leafIndex: number,
  treeSize: number,
  path: readonly Uint8Array[],
): Uint8Array | undefined => {
  if (!isSize(leafIndex) || !isSize(treeSize) || leafIndex >= treeSize) return undefined;
  if (path.length > MAX_PATH_LENGTH || !allHashes([leaf, ...path])) return undefined;
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return undefined; // more elements than the tree has levels
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      // The right edge: climb past the levels where this node had no sibling.
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : undefined;
};

/** Whether `path` proves that `leaf` (a leaf hash) is leaf `leafIndex` of the tree `root`. */
export const verifyInclusion = (
  leaf: Uint8Array,
  leafIndex: number,
  treeSize: number,
  path: readonly Uint8Array[],
  root: Uint8Array,
): boolean => {
  const computed = rootFromInclusionProof(leaf, leafIndex, treeSize, path);
  return computed !== undefined && allHashes([root]) && hashesEqual(computed, root);
};

const isPowerOfTwo = (n: number): boolean => {
  let x = n;
  while (x > 1 && !odd(x)) x = half(x);
  return x === 1;
};

/**
 * Whether `path` proves that the tree (from, fromRoot) is a prefix of the tree (to, toRoot).
 * from = to: the path must be empty and the roots equal. from = 0: the path must be empty
 * and fromRoot the empty tree's root (any tree extends the empty one).
 */
export const verifyConsistency = (
  from: number,
  to: number,
  path: readonly Uint8Array[],
  fromRoot: Uint8Array,
  toRoot: Uint8Array,
): boolean => {
  if (!isSize(from) || !isSize(to) || from > to) return false;
  if (path.length > MAX_PATH_LENGTH || !allHashes([fromRoot, toRoot, ...path])) return false;
  if (from === to) return path.length === 0 && hashesEqual(fromRoot, toRoot);
  if (from === 0) return path.length === 0 && hashesEqual(fromRoot, EMPTY_ROOT);
  if (path.length === 0) return false;
  // A power-of-two old tree is a perfect subtree of the new one: its root is the first element.
  const elements = isPowerOfTwo(from) ? [fromRoot, ...path] : path;
  let fn = from - 1;
  let sn = to - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = elements[0] as Uint8Array;
  let sr = fr;
  for (let i = 1; i < elements.length; i++) {
    const c = elements[i] as Uint8Array;
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && hashesEqual(fr, fromRoot) && hashesEqual(sr, toRoot);
};
