import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tileKey } from '../../shared/chain/storage-keys.js';
import { InvalidFormatError, InvalidInputError } from '../../shared/domain/errors.js';
import { sha256 } from '../../shared/domain/hashing.js';
import {
  decodeTile,
  edgeFromTiles,
  edgeFrontier,
  edgeRoot,
  edgeTiles,
  emptyEdge,
  encodeTile,
  extendTiles,
  frontierFromHex,
  frontierToHex,
  hashToHex,
  inclusionProof,
  leafHash,
  MemoryTree,
  MissingTileError,
  parseTilePath,
  TileHashSource,
  type TileId,
  tilePath,
  tilesBetween,
  tilesForConsistency,
  tilesForInclusion,
  tileWidth,
} from '../../shared/domain/merkle/index.js';

const leaves = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => leafHash(sha256(`tile leaf ${from + i}`)));

const storeOf = (tiles: Array<{ id: TileId; hashes: Uint8Array[] }>) => {
  const stored = new Map<string, Uint8Array>();
  for (const t of tiles) stored.set(tilePath(t.id), encodeTile(t.hashes));
  return stored;
};

const readerOf = (stored: Map<string, Uint8Array>, reads: string[] = []) => ({
  async readTile(tile: TileId) {
    reads.push(tilePath(tile));
    return stored.get(tilePath(tile));
  },
});

describe('tiles', () => {
  describe('paths and keys', () => {
    it('encode indexes in x-prefixed 3-digit groups and partial widths as .p/W (tlog-tiles)', () => {
      expect(tilePath({ level: 0, index: 1_234_067, width: 256 })).toBe('tile/0/x001/x234/067');
      expect(tilePath({ level: 1, index: 0, width: 17 })).toBe('tile/1/000.p/17');
      expect(tilePath({ level: 2, index: 1_000, width: 256 })).toBe('tile/2/x001/000');
      expect(tileKey('acme', 'run-1', { level: 0, index: 3, width: 12 })).toBe(
        't/acme/s/run-1/tile/0/003.p/12',
      );
    });

    it('parse back what they encode and refuse other spellings', () => {
      for (const tile of [
        { level: 0, index: 0, width: 1 },
        { level: 3, index: 999, width: 256 },
        { level: 1, index: 1_000_000_001, width: 255 },
      ]) {
        expect(parseTilePath(tilePath(tile))).toEqual(tile);
      }
      for (const bad of [
        'tile/0/67',
        'tile/00/067',
        'tile/0/x000/067',
        'tile/0/067.p/256',
        'tile/0/067.p/0',
        'tile/0/067.p/012',
        'tile/8/000',
        'tile/0/x1/067',
      ]) {
        expect(() => parseTilePath(bad), bad).toThrow(InvalidInputError);
      }
    });
  });

  describe('widths', () => {
    it('describe a tree of 70,000 as the tlog-tiles example does', () => {
      const tiles = tilesBetween(0, 70_000);
      const at = (level: number) => tiles.filter((t) => t.level === level);
      expect(at(0).filter((t) => t.width === 256)).toHaveLength(273);
      expect(at(0).filter((t) => t.width !== 256)).toEqual([{ level: 0, index: 273, width: 112 }]);
      expect(at(1)).toEqual([
        { level: 1, index: 0, width: 256 },
        { level: 1, index: 1, width: 17 },
      ]);
      expect(at(2)).toEqual([{ level: 2, index: 0, width: 1 }]);
      expect(tiles).toHaveLength(273 + 1 + 2 + 1);
      expect(edgeTiles(70_000)).toEqual([
        { level: 0, index: 273, width: 112 },
        { level: 1, index: 1, width: 17 },
        { level: 2, index: 0, width: 1 },
      ]);
    });

    it('give a tree of 256 one full level-0 tile and a level-1 tile of width 1', () => {
      expect(tilesBetween(0, 256)).toEqual([
        { level: 0, index: 0, width: 256 },
        { level: 1, index: 0, width: 1 },
      ]);
      expect(tileWidth(0, 1, 256)).toBe(0);
    });

    it('list only what changed between two sizes', () => {
      expect(tilesBetween(10, 10)).toEqual([]);
      expect(tilesBetween(10, 11)).toEqual([{ level: 0, index: 0, width: 11 }]);
      expect(tilesBetween(250, 260)).toEqual([
        { level: 0, index: 0, width: 256 },
        { level: 0, index: 1, width: 4 },
        { level: 1, index: 0, width: 1 },
      ]);
      expect(tilesBetween(260, 300)).toEqual([{ level: 0, index: 1, width: 44 }]);
      expect(() => tilesBetween(5, 4)).toThrow(InvalidInputError);
    });
  });

  describe('encoding', () => {
    it('is the hashes concatenated, and decodes only at the stated width', () => {
      const hashes = leaves(3);
      const bytes = encodeTile(hashes);
      expect(bytes).toHaveLength(96);
      expect(decodeTile(bytes, 3).map(hashToHex)).toEqual(hashes.map(hashToHex));
      expect(() => decodeTile(bytes, 4)).toThrow(InvalidFormatError);
      expect(() => decodeTile(bytes.subarray(0, 95), 3)).toThrow(InvalidFormatError);
      expect(() => encodeTile([])).toThrow(InvalidInputError);
      expect(() => encodeTile(leaves(257))).toThrow(InvalidInputError);
    });
  });

  describe('extendTiles', () => {
    it('writes exactly tilesBetween, batch by batch, with the memory tree hashes', async () => {
      const all = leaves(70_000);
      const tree = new MemoryTree();
      for (const l of all) tree.append(l);
      let edge = emptyEdge();
      const stored = new Map<string, Uint8Array>();
      for (const [from, to] of [
        [0, 1],
        [1, 255],
        [255, 257],
        [257, 65_536],
        [65_536, 65_537],
        [65_537, 70_000],
      ] as const) {
        const out = extendTiles(edge, all.slice(from, to));
        expect(out.tiles.map((t) => t.id)).toEqual(tilesBetween(from, to));
        for (const t of out.tiles) {
          // Each tile's hashes are the tree's level-8L hashes at its positions.
          const level = 8 * t.id.level;
          const want = t.hashes.map((_, j) => hashToHex(tree.node(level, t.id.index * 256 + j)));
          expect(t.hashes.map(hashToHex)).toEqual(want);
          stored.set(tilePath(t.id), encodeTile(t.hashes));
        }
        edge = out.edge;
        expect(hashToHex(edgeRoot(edge))).toBe(hashToHex(tree.root(to)));
        expect(edgeFrontier(edge).map(hashToHex)).toEqual(tree.frontier(to).map(hashToHex));
        // The edge read back from the stored partial tiles is the same edge.
        const reread = await edgeFromTiles(to, async (t) => stored.get(tilePath(t)));
        expect(reread.rows.map((r) => r.map(hashToHex))).toEqual(
          edge.rows.map((r) => r.map(hashToHex)),
        );
      }
    });

    it('refuses an edge whose rows do not match its size', () => {
      expect(() => extendTiles({ size: 3, rows: [leaves(2)] }, leaves(1))).toThrow(
        InvalidFormatError,
      );
      expect(() => extendTiles({ size: 256, rows: [[], []] }, leaves(1))).toThrow(
        InvalidFormatError,
      );
    });

    it('fails closed when an edge tile is missing', async () => {
      await expect(edgeFromTiles(300, async () => undefined)).rejects.toThrow(InvalidFormatError);
    });
  });

  describe('TileHashSource', () => {
    const all = leaves(1_000);
    const tree = new MemoryTree();
    for (const l of all) tree.append(l);

    it('reads each tile the plan names once, in one batch', async () => {
      const stored = storeOf(extendTiles(emptyEdge(), all).tiles);
      const reads: string[] = [];
      const source = new TileHashSource(readerOf(stored, reads), 1_000);
      const path = await inclusionProof(source, 500, 1_000);
      expect(path.map(hashToHex)).toEqual((await inclusionProof(tree, 500, 1_000)).map(hashToHex));
      expect(reads.sort()).toEqual(tilesForInclusion(500, 1_000).map(tilePath).sort());
      expect(reads).toEqual(['tile/0/001', 'tile/0/003.p/232', 'tile/1/000.p/3'].sort());
    });

    it('falls back to the full tile when a partial one was deleted', async () => {
      // Tiles written at 600 and then at 1,000: proofs at 600 need tile/0/002.p/88, which a
      // log may delete once tile/0/002 exists.
      const first = extendTiles(emptyEdge(), all.slice(0, 600));
      const second = extendTiles(first.edge, all.slice(600));
      const stored = storeOf([...first.tiles, ...second.tiles]);
      stored.delete('tile/0/002.p/88');
      const reads: string[] = [];
      const source = new TileHashSource(readerOf(stored, reads), 600);
      const path = await inclusionProof(source, 550, 600);
      expect(path.map(hashToHex)).toEqual((await inclusionProof(tree, 550, 600)).map(hashToHex));
      expect(reads).toContain('tile/0/002.p/88');
      expect(reads).toContain('tile/0/002');
    });

    it('fails closed with MissingTileError when neither partial nor full tile is stored', async () => {
      const stored = storeOf(extendTiles(emptyEdge(), all).tiles);
      stored.delete('tile/0/001');
      const source = new TileHashSource(readerOf(stored), 1_000);
      const err = await inclusionProof(source, 300, 1_000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MissingTileError);
      expect((err as MissingTileError).tile).toEqual({ level: 0, index: 1, width: 256 });
      expect((err as MissingTileError).code).toBe('ErrInvalidFormat');
    });

    it('refuses a stored tile of the wrong length', async () => {
      const stored = storeOf(extendTiles(emptyEdge(), all).tiles);
      stored.set('tile/0/001', (stored.get('tile/0/001') as Uint8Array).subarray(0, 8000));
      const source = new TileHashSource(readerOf(stored), 1_000);
      await expect(inclusionProof(source, 300, 1_000)).rejects.toThrow(InvalidFormatError);
    });
  });

  describe('pruning', () => {
    it('proofs from the pruning point on read no level-0 tile wholly below it', () => {
      // Leaves below p are pruned. Consistency between sizes >= p and inclusion of leaves >= p
      // must not need the level-0 tiles that end at or before p (docs/proofs.md, Pruning).
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 2_000_000 }),
          fc.nat(),
          fc.nat(),
          fc.nat(),
          (t, a, b, c) => {
            const p = 1 + (a % t);
            const s = p + (b % (t - p + 1));
            const leaf = p + (c % (t - p + 1));
            const tiles = [
              ...tilesForConsistency(s, t),
              ...(leaf < t ? tilesForInclusion(leaf, t) : []),
              ...(leaf < s ? tilesForInclusion(leaf, s) : []),
            ];
            const below = tiles.filter((x) => x.level === 0 && (x.index + 1) * 256 <= p);
            expect(below).toEqual([]);
          },
        ),
        { numRuns: 3_000 },
      );
    });
  });

  describe('frontier hex form', () => {
    it('round-trips and refuses a frontier of the wrong length or shape', () => {
      const tree = new MemoryTree();
      for (const l of leaves(11)) tree.append(l);
      const hex = frontierToHex(tree.frontier());
      expect(hex).toHaveLength(3); // 11 = 8 + 2 + 1
      expect(frontierFromHex(hex, 11).map(hashToHex)).toEqual(hex);
      expect(() => frontierFromHex(hex, 12)).toThrow(InvalidFormatError);
      expect(() => frontierFromHex(['zz', ...hex.slice(1)], 11)).toThrow(InvalidFormatError);
      expect(() => frontierFromHex('nope', 11)).toThrow(InvalidFormatError);
    });
  });
});
