import { InvalidFormatError, InvalidInputError } from '../errors.js';
import { HASH_BYTES } from '../hashing.js';
import { consistencyProofNodes, inclusionProofNodes } from './generate.js';
import { checkSize, type NodeId } from './shape.js';

/**
 * Tiles as in C2SP tlog-tiles (https://c2sp.org/tlog-tiles), height 8: tile (L, N) holds the
 * hashes of the perfect subtrees of 256^L leaves numbered N·256 … N·256 + 255, i.e. the tree's
 * level 8L. Level 0 holds leaf hashes; each hash at level L + 1 is the MTH of a full tile at
 * level L. The 8 tree levels inside a tile are recomputed from its bottom row.
 *
 * A tile of a tree of size s is *partial* when it has fewer than 256 hashes; its width is
 * fixed by s, so a partial tile is immutable as well, stored under its own key (`.p/W`).
 */

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

/** A tile: level L, index N within the level, width W (1..256; 256 = full). */
export interface TileId {
  level: number;
  index: number;
  width: number;
}

/** A tile with its hashes (W × 32 bytes of content). */
export interface Tile {
  id: TileId;
  hashes: Uint8Array[];
}

const MAX_LEVEL = 7; // 256^7 = 2^56 > 2^53: no safe-integer tree needs more

/** Hashes at tree level 8L in a tree of `treeSize` leaves. */
const countAt = (level: number, treeSize: number): number =>
  Math.floor(treeSize / TILE_WIDTH ** level);

/** Width of tile (level, index) in a tree of `treeSize` leaves; 0 when the tile does not exist yet. */
export const tileWidth = (level: number, index: number, treeSize: number): number =>
  Math.max(0, Math.min(TILE_WIDTH, countAt(level, treeSize) - index * TILE_WIDTH));

/** The tile (level, index) as it is in a tree of `treeSize` leaves, or undefined if empty. */
export const tileAt = (level: number, index: number, treeSize: number): TileId | undefined => {
  const width = tileWidth(level, index, treeSize);
  return width === 0 ? undefined : { level, index, width };
};

/**
 * The tiles a tree of `newSize` has and a tree of `oldSize` had not (new full tiles, and the
 * partial tiles whose width changed): what an append from oldSize to newSize must write.
 * Tiles of oldSize not listed here are unchanged.
 */
export const tilesBetween = (oldSize: number, newSize: number): TileId[] => {
  checkSize(oldSize, 'oldSize');
  checkSize(newSize, 'newSize');
  if (oldSize > newSize) throw new InvalidInputError('oldSize must not exceed newSize');
  const tiles: TileId[] = [];
  for (let level = 0; level <= MAX_LEVEL; level++) {
    const before = countAt(level, oldSize);
    const after = countAt(level, newSize);
    if (after === before) continue;
    // Full tiles completed in between: those whose end (256·(N+1)) is in (before, after].
    for (let n = Math.floor(before / TILE_WIDTH); (n + 1) * TILE_WIDTH <= after; n++) {
      tiles.push({ level, index: n, width: TILE_WIDTH });
    }
    const rest = after % TILE_WIDTH;
    if (rest !== 0) tiles.push({ level, index: Math.floor(after / TILE_WIDTH), width: rest });
  }
  return tiles;
};

/** The partial tiles of a tree of `size` (its right edge), lowest level first. */
export const edgeTiles = (size: number): TileId[] => {
  checkSize(size, 'size');
  const tiles: TileId[] = [];
  for (let level = 0; level <= MAX_LEVEL; level++) {
    const count = countAt(level, size);
    if (count % TILE_WIDTH !== 0) {
      tiles.push({ level, index: Math.floor(count / TILE_WIDTH), width: count % TILE_WIDTH });
    }
  }
  return tiles;
};

/** tlog-tiles index encoding: 3-digit groups, all but the last prefixed with `x` (1234067 -> x001/x234/067). */
const encodeIndex = (index: number): string => {
  const groups: string[] = [];
  let rest = index;
  do {
    groups.unshift(String(rest % 1000).padStart(3, '0'));
    rest = Math.floor(rest / 1000);
  } while (rest > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
};

const checkTile = (tile: TileId): TileId => {
  const { level, index, width } = tile;
  if (!Number.isInteger(level) || level < 0 || level > MAX_LEVEL) {
    throw new InvalidInputError(`tile level must be 0..${MAX_LEVEL}`);
  }
  if (!Number.isSafeInteger(index) || index < 0) throw new InvalidInputError('bad tile index');
  if (!Number.isInteger(width) || width < 1 || width > TILE_WIDTH) {
    throw new InvalidInputError(`tile width must be 1..${TILE_WIDTH}`);
  }
  return tile;
};

/** `tile/<L>/<N>[.p/<W>]`, as tlog-tiles names it. */
export const tilePath = (tile: TileId): string => {
  const { level, index, width } = checkTile(tile);
  const partial = width === TILE_WIDTH ? '' : `.p/${width}`;
  return `tile/${level}/${encodeIndex(index)}${partial}`;
};

const TILE_PATH = /^tile\/(0|[1-9]\d*)\/((?:x\d{3}\/)*)(\d{3})(?:\.p\/([1-9]\d*))?$/;

/** The tile a path names; the inverse of `tilePath` (non-canonical spellings are refused). */
export const parseTilePath = (path: string): TileId => {
  const m = TILE_PATH.exec(path);
  if (!m) throw new InvalidInputError(`not a tile path: ${path}`);
  const groups = `${m[2] ?? ''}${m[3] ?? ''}`.replaceAll('x', '').split('/');
  const tile = checkTile({
    level: Number(m[1]),
    index: Number(groups.join('')),
    width: m[4] === undefined ? TILE_WIDTH : Number(m[4]),
  });
  if (tilePath(tile) !== path) throw new InvalidInputError(`not a canonical tile path: ${path}`);
  return tile;
};

/** A tile's bytes: its hashes concatenated, nothing else (tlog-tiles). */
export const encodeTile = (hashes: readonly Uint8Array[]): Uint8Array => {
  if (hashes.length < 1 || hashes.length > TILE_WIDTH) {
    throw new InvalidInputError(`a tile holds 1..${TILE_WIDTH} hashes`);
  }
  const out = new Uint8Array(hashes.length * HASH_BYTES);
  hashes.forEach((h, i) => {
    if (h.length !== HASH_BYTES) throw new InvalidInputError('tile hashes are 32 bytes');
    out.set(h, i * HASH_BYTES);
  });
  return out;
};

/** Decodes a stored tile that must be exactly `width` hashes wide (fail closed otherwise). */
export const decodeTile = (bytes: Uint8Array, width: number): Uint8Array[] => {
  if (bytes.length !== width * HASH_BYTES) {
    throw new InvalidFormatError(
      `tile of width ${width} has ${bytes.length} bytes, not ${width * HASH_BYTES}`,
    );
  }
  // Plain Uint8Array views (a stored body may be a Buffer; see hash.ts on Buffer#slice).
  return Array.from(
    { length: width },
    (_, i) => new Uint8Array(bytes.buffer, bytes.byteOffset + i * HASH_BYTES, HASH_BYTES),
  );
};

/**
 * Where the bottom row of a perfect subtree lies: tile (L, N) at level L = ⌊level/8⌋, hashes
 * offset … offset + count − 1 of it (count = 2^(level mod 8), never crossing a tile).
 */
export const nodeSpan = (
  node: NodeId,
): { level: number; index: number; offset: number; count: number } => {
  const level = Math.floor(node.level / TILE_HEIGHT);
  const count = 2 ** (node.level % TILE_HEIGHT);
  const first = node.index * count;
  return { level, index: Math.floor(first / TILE_WIDTH), offset: first % TILE_WIDTH, count };
};

/** The tiles (at their width in a tree of `treeSize`) that hold the hashes of `nodes`, deduplicated. */
export const tilesForNodes = (nodes: readonly NodeId[], treeSize: number): TileId[] => {
  const seen = new Map<string, TileId>();
  for (const node of nodes) {
    const span = nodeSpan(node);
    const tile = tileAt(span.level, span.index, treeSize);
    if (tile === undefined || span.offset + span.count > tile.width) {
      throw new InvalidInputError(
        `subtree (${node.level}, ${node.index}) is not complete in a tree of ${treeSize}`,
      );
    }
    seen.set(`${tile.level}/${tile.index}`, tile);
  }
  return [...seen.values()];
};

/** The tiles an inclusion proof reads: with a tile per object, its storage requests. */
export const tilesForInclusion = (leafIndex: number, treeSize: number): TileId[] =>
  tilesForNodes(inclusionProofNodes(leafIndex, treeSize), treeSize);

/** The tiles a consistency proof from `from` to `to` reads. */
export const tilesForConsistency = (from: number, to: number): TileId[] =>
  tilesForNodes(consistencyProofNodes(from, to), to);
