import type { JsonValue } from '../canonical.js';

/**
 * The in-memory Merkle tree of a JSON value: one VNode per value the tree tracks, each with
 * its hash and canonical size, beside the JSON itself (containers by reference, so a node
 * always knows its value).
 *
 *   leaf    a value whose canonical JSON is ≤ INLINE_MAX bytes, or a scalar ≤ STRING_PAGE;
 *           its descendants have no nodes (an edit inside re-hashes the whole leaf)
 *   array / object   a container above INLINE_MAX: a paged tree over its children (seq-tree.ts)
 *   string  a string above STRING_PAGE: its canonical bytes in pages
 */

export const Kind = { Leaf: 0, Array: 1, Object: 2, String: 3 } as const;
export type Kind = (typeof Kind)[keyof typeof Kind];
export type ContainerKind = typeof Kind.Array | typeof Kind.Object;

export interface VNode {
  kind: Kind;
  /** 32 bytes; stale while the node is dirty; empty for a leaf not hashed yet. */
  hash: Buffer;
  /** UTF-8 bytes of the value's RFC 8785 canonical JSON. */
  size: number;
  value: JsonValue;
  /** Containers (Kind.Array / Kind.Object): the paged tree over the children. */
  tree?: SeqTree;
  /** Containers: Σ child sizes (+ key and colon sizes for objects) of the clean children. */
  childSum?: number;
  /** String nodes: the hashes of the byte pages. */
  pages?: Buffer[];
  /** Set while the node needs work before its hash is valid (merkle-state.ts). */
  dirty?: Dirty;
}

/** What a container must redo before its hash is valid again (merkle-state.ts). */
export interface Dirty {
  /** Expanded from a leaf: its pages are built from nothing, its leaves may lack hashes. */
  fresh: boolean;
  /** Children whose hash or size changed; their sizes are out of `childSum` until clean. */
  children: Set<VNode>;
  /** Level-0 window (min, max, net delta), see seq-tree.ts `rechunk`. */
  window: [number, number, number] | undefined;
}

/** Level-0 entry of an object node: a member, in key order (UTF-16 code units). */
export interface ObjectEntry {
  key: string;
  /** UTF-8 of the key, as hashed. */
  keyBytes: Buffer;
  /** Bytes of the key's canonical JSON (quotes and escapes), for the container's size. */
  keySize: number;
  /** -1 until computed (see format.ts keyRank). */
  rank: number;
  child: VNode;
}

/** Entry of level ≥ 1: one page of the level below. */
export interface PageEntry {
  hash: Buffer;
  /** Objects: the page's first key (UTF-8 and string). */
  key?: Buffer;
  keyText?: string;
  /** Objects: the rank of the page's last key, which decides the cut at this level. */
  rank: number;
}

export type Entry = VNode | ObjectEntry | PageEntry;

/** One level of a paged tree: its entries and the (exclusive) end index of each page. */
export interface Level {
  entries: Entry[];
  ends: number[];
}

/** levels[0] holds the children; the last level has exactly one page, the root. */
export interface SeqTree {
  levels: Level[];
}
