import { InvalidFormatError, PrunedError } from '../domain/errors.js';
import {
  eventLeafHash,
  type HashSource,
  type NodeId,
  nodeHash,
  perfectRoot,
  TileHashSource,
  type TileReader,
} from '../domain/merkle/index.js';
import { tileKey } from '../domain/merkle/tiles.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import type { HeadRecord } from './layout.js';
import type { Reader } from './reader.js';
import { type TreeState, tilesKey } from './tree-commit.js';

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

/**
 * Leaf hashes [start, end) of a stream's tree, from its verified segments (event seq
 * `treeBase + i + 1` is leaf i). Events below the pruning point are gone: ErrPruned.
 */
export const segmentLeaves = async (
  reader: Reader,
  at: { tenant: string; stream: string; head: HeadRecord; treeBase: number },
  start: number,
  end: number,
): Promise<Uint8Array[]> => {
  const { tenant, stream, head, treeBase } = at;
  const from = treeBase + start + 1;
  const to = treeBase + end;
  if ((head.prunedSeq ?? 0) >= from) throw new PrunedError(stream, head.prunedSeq ?? 0);
  const leaves: Uint8Array[] = [];
  await reader.walk(
    tenant,
    stream,
    from,
    undefined,
    () => ({ only: { from, to } }),
    (segment) => {
      for (const e of segment.events) {
        if (e.seq >= from && e.seq <= to) leaves.push(eventLeafHash(e.hash));
      }
      return (segment.events.at(-1)?.seq ?? to) < to;
    },
  );
  if (leaves.length !== end - start) {
    throw new InvalidFormatError(`segments hold ${leaves.length} of leaves ${start}..${end - 1}`);
  }
  return leaves;
};

type Plan =
  | { kind: 'tile'; at: number }
  | { kind: 'leaves'; start: number; end: number }
  | { kind: 'split'; left: Plan; right: Plan };

const span = (node: NodeId) => ({
  start: node.index * 2 ** node.level,
  end: (node.index + 1) * 2 ** node.level,
});

export interface StreamHashSourceOptions {
  tiles: TileReader;
  /** Tiles are stored for the tree of this many leaves. */
  tiledSize: number;
  /** The head's tree: proofs are for sizes up to its treeSize. */
  tree: TreeState;
  /** Leaf hashes [start, end) from the segments. */
  leaves: (start: number, end: number) => Promise<Uint8Array[]>;
}

export class StreamHashSource implements HashSource {
  readonly #o: StreamHashSourceOptions;
  readonly #tiles: TileHashSource;
  /** Leaf hashes read so far: [start, start + hashes.length). */
  #leaves: { start: number; hashes: Uint8Array[] } | undefined;
  /** Leaf reads this source made (for benchmarks and tests). */
  leafReads = 0;

  constructor(options: StreamHashSourceOptions) {
    this.#o = options;
    this.#tiles = new TileHashSource(options.tiles, options.tiledSize);
  }

  async nodeHashes(nodes: readonly NodeId[]): Promise<Uint8Array[]> {
    const tileNodes: NodeId[] = [];
    let lo = Number.POSITIVE_INFINITY;
    let hi = 0;
    const plan = (node: NodeId): Plan => {
      const { start, end } = span(node);
      if (end > this.#o.tree.treeSize) {
        throw new InvalidFormatError(`subtree (${node.level}, ${node.index}) is past the tree`);
      }
      if (end <= this.#o.tiledSize) {
        tileNodes.push(node);
        return { kind: 'tile', at: tileNodes.length - 1 };
      }
      if (start >= this.#o.tiledSize) {
        lo = Math.min(lo, start);
        hi = Math.max(hi, end);
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
    const [tiled] = await Promise.all([
      tileNodes.length > 0 ? this.#tiles.nodeHashes(tileNodes) : Promise.resolve([]),
      hi > 0 ? this.#load(lo, hi) : Promise.resolve(),
    ]);
    const evaluate = (p: Plan): Uint8Array => {
      switch (p.kind) {
        case 'tile':
          return tiled[p.at] as Uint8Array;
        case 'leaves': {
          const leaves = this.#leaves as { start: number; hashes: Uint8Array[] };
          const from = p.start - leaves.start;
          return perfectRoot(leaves.hashes.slice(from, from + (p.end - p.start)));
        }
        case 'split':
          return nodeHash(evaluate(p.left), evaluate(p.right));
      }
    };
    return plans.map(evaluate);
  }

  /** Makes sure leaves [start, end) are loaded (one read, widened to what was read before). */
  async #load(start: number, end: number): Promise<void> {
    const have = this.#leaves;
    if (have && have.start <= start && have.start + have.hashes.length >= end) return;
    const from = Math.min(start, have?.start ?? start);
    const to = Math.max(end, have ? have.start + have.hashes.length : end);
    this.leafReads++;
    this.#leaves = { start: from, hashes: await this.#o.leaves(from, to) };
  }
}
