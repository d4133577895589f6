import { pad16, SEGMENT_INDEX_PREFIX, streamPk, tileKey, tilesKey } from '../chain/storage-keys.js';
import { InvalidFormatError, UnavailableError } from '../domain/errors.js';
import {
  completedNodeIds,
  type HashSource,
  hexToHash,
  isSize,
  type NodeId,
  nodeHash,
  perfectRoot,
  TileHashSource,
  type TileReader,
} from '../domain/merkle/index.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { STORED_NODE_LEVEL, type TreeState } from './tree-commit.js';

/**
 * Where the server's proofs get their hashes (docs/proofs.md, "Computing proofs without
 * reading the stream"): a composite HashSource over what is stored, so no proof reads the
 * whole stream.
 *
 *   1. the tiles, written by the compactor (tree-tiles.ts) for a tree of `tiledSize` leaves
 *      (the `tiles` record): any subtree that ends at or below `tiledSize`;
 *   2. the untiled right edge, `tiledSize` up to the head, from the chain hashes of the
 *      segments (verified against their index records, as every read is): bounded by what
 *      was appended since the compactor's last visit of the stream;
 *   3. a subtree that straddles `tiledSize` is split into its two halves, recursively.
 *
 * Each batch reads every tile it needs once and the segments of one leaf range once, in
 * parallel. The head's frontier is deliberately not a source: the proof service checks the
 * proofs it serves at the head's size against the root of that frontier, and an edited
 * frontier must fail that check rather than answer for itself. Nothing read is trusted: a
 * wrong hash makes a proof the client refuses.
 */

/** A stream's tiles record: tiles are stored for the tree of `size` leaves after `treeBase`. */
export interface TilesRecord {
  treeBase: number;
  size: number;
}

export const readTilesRecord = async (
  records: RecordStore,
  tenant: string,
  stream: string,
): Promise<TilesRecord | undefined> => {
  const item = await records.get(tilesKey(tenant, stream));
  if (!item) return undefined;
  const { treeBase, size } = item;
  if (typeof treeBase !== 'number' || typeof size !== 'number') {
    throw new InvalidFormatError(`tiles record of ${stream} is malformed`);
  }
  return { treeBase, size };
};

/** Tiles of one stream, read from the object store by their tlog-tiles key. */
export const objectTileReader = (
  objects: ObjectStore,
  tenant: string,
  stream: string,
): TileReader => ({
  readTile: async (tile) => (await objects.get(tileKey(tenant, stream, tile)))?.body,
});

type Plan =
  | { kind: 'tile'; at: number }
  | { kind: 'stored'; at: number; node: NodeId }
  | { kind: 'leaves'; start: number; end: number }
  | { kind: 'split'; left: Plan; right: Plan };

const span = (node: NodeId) => ({
  start: node.index * 2 ** node.level,
  end: (node.index + 1) * 2 ** node.level,
});

/** Leaves a proof may hash from the segments at most (docs/proofs.md, "The untiled tail"). */
export const PROOF_LEAF_BUDGET = 1024;

/** Leaf ranges at most this far apart are read in one walk. */
const MERGE_GAP = 64;

export interface StreamHashSourceOptions {
  tiles: TileReader;
  /** Tiles are stored for the tree of this many leaves. */
  tiledSize: number;
  /** The head's tree: proofs are for sizes up to its treeSize. */
  tree: TreeState;
  /** Leaf hashes [start, end) from the segments. */
  leaves: (start: number, end: number) => Promise<Uint8Array[]>;
  /**
   * Hashes of subtrees of STORED_NODE_LEVEL or more past the tiles, from the index records
   * (`treeNodes`, written on commit); undefined for one no record holds (a merged or older
   * record): its leaves are read instead.
   */
  stored?: (nodes: readonly NodeId[]) => Promise<Array<Uint8Array | undefined>>;
  /** Leaves read from segments per batch at most; past it ErrUnavailable. Default PROOF_LEAF_BUDGET. */
  maxLeaves?: number;
  /** The Retry-After of that ErrUnavailable (the compactor tiles meanwhile). Default 30 s. */
  retryAfterMs?: number;
}

/**
 * Lets the event loop run before each batch of a proof: on the embedded stores every read is
 * synchronous (SQLite), so 20 concurrent proofs would otherwise run as one uninterrupted
 * stretch of microtasks and hold /healthz for all of it.
 */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class StreamHashSource implements HashSource {
  readonly #o: StreamHashSourceOptions;
  readonly #tiles: TileHashSource;
  /** Leaf hashes read so far, by leaf index. */
  readonly #leaves = new Map<number, Uint8Array>();
  /** Leaf reads (segment walks) this source made (for benchmarks and tests). */
  leafReads = 0;

  constructor(options: StreamHashSourceOptions) {
    this.#o = options;
    this.#tiles = new TileHashSource(options.tiles, options.tiledSize);
  }

  async nodeHashes(nodes: readonly NodeId[]): Promise<Uint8Array[]> {
    await yieldToLoop();
    const tileNodes: NodeId[] = [];
    const storedNodes: NodeId[] = [];
    const ranges: Array<{ start: number; end: number }> = [];
    const { tiledSize, tree } = this.#o;
    const plan = (node: NodeId): Plan => {
      const { start, end } = span(node);
      if (end > tree.treeSize) {
        throw new InvalidFormatError(`subtree (${node.level}, ${node.index}) is past the tree`);
      }
      if (end <= tiledSize) {
        tileNodes.push(node);
        return { kind: 'tile', at: tileNodes.length - 1 };
      }
      if (start >= tiledSize && node.level >= STORED_NODE_LEVEL && this.#o.stored) {
        storedNodes.push(node);
        return { kind: 'stored', at: storedNodes.length - 1, node };
      }
      if (start >= tiledSize) {
        ranges.push({ start, end });
        return { kind: 'leaves', start, end };
      }
      const level = node.level - 1;
      return {
        kind: 'split',
        left: plan({ level, index: node.index * 2 }),
        right: plan({ level, index: node.index * 2 + 1 }),
      };
    };
    const plans = nodes.map(plan);
    const [tiled, stored] = await Promise.all([
      tileNodes.length > 0 ? this.#tiles.nodeHashes(tileNodes) : Promise.resolve([]),
      storedNodes.length > 0 && this.#o.stored
        ? this.#o.stored(storedNodes)
        : Promise.resolve([] as Array<Uint8Array | undefined>),
    ]);
    // A subtree no record holds (merged, or committed before records held them): its leaves.
    for (const [i, hash] of stored.entries()) {
      if (hash === undefined) ranges.push(span(storedNodes[i] as NodeId));
    }
    await this.#load(ranges);
    const leafRoot = (start: number, end: number) =>
      perfectRoot(
        Array.from({ length: end - start }, (_, i) => this.#leaves.get(start + i) as Uint8Array),
      );
    const evaluate = (p: Plan): Uint8Array => {
      switch (p.kind) {
        case 'tile':
          return tiled[p.at] as Uint8Array;
        case 'stored': {
          const hash = stored[p.at];
          if (hash) return hash;
          const { start, end } = span(p.node);
          return leafRoot(start, end);
        }
        case 'leaves':
          return leafRoot(p.start, p.end);
        case 'split':
          return nodeHash(evaluate(p.left), evaluate(p.right));
      }
    };
    return plans.map(evaluate);
  }

  /**
   * Makes sure the leaves of `ranges` are loaded: the ranges merged, each read once, in
   * parallel. More than `maxLeaves` new leaves is ErrUnavailable, before any is read: the
   * work a proof does on the request path stays bounded however far the tiles lag.
   */
  async #load(ranges: Array<{ start: number; end: number }>): Promise<void> {
    const missing = ranges
      .filter((r) => !this.#has(r.start, r.end))
      .sort((a, b) => a.start - b.start);
    const merged: Array<{ start: number; end: number }> = [];
    for (const r of missing) {
      const last = merged[merged.length - 1];
      // Ranges a few leaves apart are read as one: one segment walk, not one per range.
      if (last && r.start <= last.end + MERGE_GAP) last.end = Math.max(last.end, r.end);
      else merged.push({ ...r });
    }
    const total = merged.reduce((n, r) => n + (r.end - r.start), 0);
    const budget = this.#o.maxLeaves ?? PROOF_LEAF_BUDGET;
    if (total > budget) {
      const detail =
        `this proof needs ${total} leaves that are neither tiled nor in the index records ` +
        `(at most ${budget} are read per proof); retry once the compactor has tiled them`;
      throw new UnavailableError(detail, { retryAfterMs: this.#o.retryAfterMs ?? 30_000, detail });
    }
    await Promise.all(
      merged.map(async ({ start, end }) => {
        this.leafReads++;
        const hashes = await this.#o.leaves(start, end);
        for (const [i, h] of hashes.entries()) this.#leaves.set(start + i, h);
      }),
    );
  }

  #has(start: number, end: number): boolean {
    for (let i = start; i < end; i++) if (!this.#leaves.has(i)) return false;
    return true;
  }
}

/**
 * The subtree hashes of index records (`treeNodes`, tree-commit.ts): subtree (L, N) ends at
 * leaf e = (N + 1)·2^L, seq treeBase + e, so it is in the record of the segment holding that
 * seq, the first whose key (its lastSeq) is at or past it: one query of one item. A record
 * of another tree base, or whose batch does not end the subtree (a merged record keeps only
 * its last batch's), answers undefined. Hashes are not trusted (proofs are checked).
 */
export const indexNodeReader =
  (records: RecordStore, at: { tenant: string; stream: string; treeBase: number }) =>
  async (nodes: readonly NodeId[]): Promise<Array<Uint8Array | undefined>> => {
    const pk = streamPk(at.tenant, at.stream);
    const bySeq = new Map<number, Promise<TreeNodes | undefined>>();
    const recordAt = (seq: number) => {
      let found = bySeq.get(seq);
      if (!found) {
        found = records
          .query(pk, {
            skPrefix: SEGMENT_INDEX_PREFIX,
            after: `${SEGMENT_INDEX_PREFIX}${pad16(seq - 1)}`,
            limit: 1,
          })
          .then((page) => treeNodesOf(page.items[0]));
        bySeq.set(seq, found);
      }
      return found;
    };
    return Promise.all(
      nodes.map(async (node) => {
        const end = (node.index + 1) * 2 ** node.level;
        const stored = await recordAt(at.treeBase + end);
        if (!stored || stored.base !== at.treeBase || end <= stored.from || end > stored.to) {
          return undefined;
        }
        return stored.hashOf(node);
      }),
    );
  };

interface TreeNodes {
  base: number;
  from: number;
  to: number;
  hashOf(node: NodeId): Uint8Array | undefined;
}

const treeNodesOf = (item: Item | undefined): TreeNodes | undefined => {
  const raw = item?.treeNodes as Record<string, unknown> | undefined;
  if (raw === undefined || raw === null || typeof raw !== 'object') return undefined;
  const { base, from, to, hashes } = raw;
  if (!isSize(base) || !isSize(from) || !isSize(to) || from >= to || typeof hashes !== 'string') {
    throw new InvalidFormatError('segment index record has malformed treeNodes');
  }
  const ids = completedNodeIds(from, to, STORED_NODE_LEVEL);
  if (hashes.length !== ids.length * 64) {
    throw new InvalidFormatError('segment index record has malformed treeNodes');
  }
  const position = new Map(ids.map((id, i) => [`${id.level}/${id.index}`, i]));
  return {
    base,
    from,
    to,
    hashOf: (node) => {
      const i = position.get(`${node.level}/${node.index}`);
      return i === undefined ? undefined : hexToHash(hashes.slice(i * 64, (i + 1) * 64));
    },
  };
};
