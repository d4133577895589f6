import { InvalidFormatError } from '../errors.js';
import { foldRange } from './frontier.js';
import { checkSize, rangeNodes } from './shape.js';
import { perfectRoot } from './tile-source.js';
import { decodeTile, edgeTiles, TILE_WIDTH, type Tile, type TileId, tilePath } from './tiles.js';

/**
 * Writing tiles without reading the tree: the rightmost, incomplete tile of each level (the
 * partial tiles of the current size) is all that is needed to extend the tiles by new leaves,
 * as the frontier is for the root. The writer (segment writer or compactor) reads those
 * partial tiles (`edgeTiles(size)`, at most one per level), calls `extendTiles` with the new
 * leaf hashes and writes every tile it returns create-only.
 */

/** The tiles' right edge at `size`: rows[L] are the hashes of the partial tile at level L (0..255 of them). */
export interface TileEdge {
  size: number;
  rows: Uint8Array[][];
}

export const emptyEdge = (): TileEdge => ({ size: 0, rows: [] });

/** Each row must hold exactly the hashes of its level's partial tile (and none past the top). */
const checkEdge = (edge: TileEdge): void => {
  checkSize(edge.size, 'edge size');
  const levels = Math.max(edge.rows.length, 8); // 256^7 > 2^53: level 7 and up are empty
  for (let level = 0; level < levels; level++) {
    const want = Math.floor(edge.size / TILE_WIDTH ** level) % TILE_WIDTH;
    if ((edge.rows[level]?.length ?? 0) !== want) {
      throw new InvalidFormatError(`tile edge row ${level} must hold ${want} hashes`);
    }
  }
};

/**
 * The edge of a tree of `size` from its stored partial tiles (`edgeTiles(size)`, as read).
 * `read` answers a tile's bytes or undefined; a missing edge tile fails closed.
 */
export const edgeFromTiles = async (
  size: number,
  read: (tile: TileId) => Promise<Uint8Array | undefined>,
): Promise<TileEdge> => {
  checkSize(size, 'size');
  const rows: Uint8Array[][] = [];
  const tiles = edgeTiles(size);
  const bytes = await Promise.all(tiles.map(read));
  tiles.forEach((tile, i) => {
    const body = bytes[i];
    if (body === undefined) throw new InvalidFormatError(`edge tile ${tilePath(tile)} is missing`);
    rows[tile.level] = decodeTile(body, tile.width).map((h) => h.slice());
  });
  for (let l = 0; l < rows.length; l++) rows[l] ??= [];
  return { size, rows };
};

/**
 * Appends leaf hashes to the tiles. Returns the new edge and every tile that the tree of the
 * new size has and the old one had not (exactly `tilesBetween(old, new)`): full tiles
 * completed on the way, then the new partial tiles. Never mutates `edge`.
 */
export const extendTiles = (
  edge: TileEdge,
  leaves: readonly Uint8Array[],
): { edge: TileEdge; tiles: Tile[] } => {
  checkEdge(edge);
  const rows = edge.rows.map((row) => row.slice());
  const counts = rows.map((_, level) => Math.floor(edge.size / TILE_WIDTH ** level));
  const tiles: Tile[] = [];
  const push = (level: number, hash: Uint8Array): void => {
    let at = level;
    let h = hash;
    for (;;) {
      rows[at] ??= [];
      counts[at] ??= 0;
      const row = rows[at] as Uint8Array[];
      row.push(h);
      counts[at] = (counts[at] as number) + 1;
      if (row.length < TILE_WIDTH) return;
      // A full tile: written once, and its root is the next hash one tile level up.
      tiles.push({
        id: { level: at, index: (counts[at] as number) / TILE_WIDTH - 1, width: TILE_WIDTH },
        hashes: row,
      });
      h = perfectRoot(row);
      rows[at] = [];
      at += 1;
    }
  };
  for (const leaf of leaves) push(0, leaf);
  const size = edge.size + leaves.length;
  rows.forEach((row, level) => {
    const before = Math.floor(edge.size / TILE_WIDTH ** level);
    if (row.length > 0 && counts[level] !== before) {
      tiles.push({
        id: { level, index: Math.floor((counts[level] as number) / TILE_WIDTH), width: row.length },
        hashes: row.slice(),
      });
    }
  });
  return { edge: { size, rows }, tiles };
};

/**
 * The frontier of the edge's tree (largest subtree first), from the rows alone: each row's
 * hashes split into perfect subtrees like a small tree of their own. Lets a backfill check
 * the tiles it wrote against the head's frontier.
 */
export const edgeFrontier = (edge: TileEdge): Uint8Array[] => {
  const frontier: Uint8Array[] = [];
  for (let level = edge.rows.length - 1; level >= 0; level--) {
    const row = edge.rows[level] ?? [];
    for (const node of rangeNodes(0, row.length)) {
      const width = 2 ** node.level;
      frontier.push(perfectRoot(row.slice(node.index * width, (node.index + 1) * width)));
    }
  }
  return frontier;
};

/** The root of the edge's tree. */
export const edgeRoot = (edge: TileEdge): Uint8Array => foldRange(edgeFrontier(edge));
