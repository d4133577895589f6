import { InvalidFormatError } from '../errors.js';
import type { HashSource } from './generate.js';
import { nodeHash } from './hash.js';
import { checkSize, type NodeId } from './shape.js';
import { decodeTile, nodeSpan, TILE_WIDTH, type TileId, tileAt, tilePath } from './tiles.js';

/**
 * Reads tiles by their exact id (level, index, width); the server wires it to the object
 * store (`tileKey`), a client could wire it to HTTP. Answers undefined for a tile not stored.
 */
export interface TileReader {
  readTile(tile: TileId): Promise<Uint8Array | undefined>;
}

/** A tile the tree needs is not stored (never written, or deleted): proofs fail closed. */
export class MissingTileError extends InvalidFormatError {
  readonly tile: TileId;

  constructor(tile: TileId) {
    super(`tile ${tilePath(tile)} is not stored`);
    this.tile = tile;
  }
}

/** The root of a perfect subtree from its bottom row (2^k hashes), pairwise. */
export const perfectRoot = (row: readonly Uint8Array[]): Uint8Array => {
  let level = row.slice();
  while (level.length > 1) {
    const up: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      up.push(nodeHash(level[i] as Uint8Array, level[i + 1] as Uint8Array));
    }
    level = up;
  }
  const root = level[0];
  if (root === undefined) throw new InvalidFormatError('empty subtree');
  return root;
};

/**
 * A HashSource over the tiles of a tree of `treeSize` leaves. Per batch it reads each tile
 * once, all in parallel, at the width the tree of `treeSize` has (as a tlog-tiles client
 * does); when that partial tile is gone (tlog-tiles allows deleting partial tiles once the
 * full one exists) it reads the full tile, whose first W hashes are the same.
 *
 * Tiles are not trusted: a wrong hash makes a proof that fails verification. Servers may
 * check a proof against the head's root before answering.
 */
export class TileHashSource implements HashSource {
  readonly #tiles = new Map<string, Promise<Uint8Array[]>>();

  constructor(
    readonly reader: TileReader,
    readonly treeSize: number,
  ) {
    checkSize(treeSize, 'treeSize');
  }

  async nodeHashes(nodes: readonly NodeId[]): Promise<Uint8Array[]> {
    const spans = nodes.map((node) => {
      const span = nodeSpan(node);
      const tile = tileAt(span.level, span.index, this.treeSize);
      if (tile === undefined || span.offset + span.count > tile.width) {
        throw new InvalidFormatError(
          `subtree (${node.level}, ${node.index}) is not complete in a tree of ${this.treeSize}`,
        );
      }
      return { span, tile };
    });
    // Reads start only once every node is known to be in the tree (no read left unobserved).
    const withKeys = spans.map(({ span, tile }) => ({ span, key: this.#load(tile) }));
    // Promise.all: every read runs in parallel and every rejection is observed.
    const keys = [...new Set(withKeys.map((s) => s.key))];
    const loaded = new Map(keys.map((k, i) => [k, i]));
    const tiles = await Promise.all(keys.map((k) => this.#tiles.get(k) as Promise<Uint8Array[]>));
    return withKeys.map(({ span, key }) => {
      const hashes = tiles[loaded.get(key) as number] as Uint8Array[];
      return perfectRoot(hashes.slice(span.offset, span.offset + span.count));
    });
  }

  /** Starts reading the tile unless this source already did (reads are memoised per source). */
  #load(tile: TileId): string {
    const key = `${tile.level}/${tile.index}`;
    if (!this.#tiles.has(key)) this.#tiles.set(key, this.#read(tile));
    return key;
  }

  async #read(tile: TileId): Promise<Uint8Array[]> {
    const exact = await this.reader.readTile(tile);
    if (exact !== undefined) return decodeTile(exact, tile.width);
    if (tile.width < TILE_WIDTH) {
      const full = { ...tile, width: TILE_WIDTH };
      const bytes = await this.reader.readTile(full);
      if (bytes !== undefined) return decodeTile(bytes, TILE_WIDTH).slice(0, tile.width);
    }
    throw new MissingTileError(tile);
  }
}
