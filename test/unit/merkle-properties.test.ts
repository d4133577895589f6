import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../../shared/domain/hashing.js';
import {
  appendLeaf,
  consistencyProof,
  emptyEdge,
  extendTiles,
  frontierRoot,
  hashesEqual,
  hashToHex,
  inclusionProof,
  leafHash,
  MemoryTree,
  nodeHash,
  type TileEdge,
  TileHashSource,
  type TileId,
  tilePath,
  tilesForConsistency,
  tilesForInclusion,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/domain/merkle/index.js';

/**
 * Property tests on random trees of up to ~2,000 leaves: every proof verifies, proofs served
 * from tiles equal proofs from memory, and any tampering fails verification.
 */

const entry = (seed: number, i: number) => sha256(`seed ${seed} entry ${i}`);

const buildTree = (seed: number, size: number) => {
  const tree = new MemoryTree();
  const leaves: Uint8Array[] = [];
  for (let i = 0; i < size; i++) {
    const leaf = leafHash(entry(seed, i));
    leaves.push(leaf);
    tree.append(leaf);
  }
  return { tree, leaves };
};

/** Appends in batches as a writer would, keeping every tile written (full and partial). */
const tilesByBatches = (leaves: Uint8Array[], batches: number[]) => {
  const stored = new Map<string, Uint8Array[]>();
  let edge: TileEdge = emptyEdge();
  const heads: number[] = [];
  let at = 0;
  for (const b of batches) {
    if (at >= leaves.length) break;
    const next = Math.min(leaves.length, at + b);
    const out = extendTiles(edge, leaves.slice(at, next));
    for (const t of out.tiles) stored.set(tilePath(t.id), t.hashes);
    edge = out.edge;
    at = next;
    heads.push(at);
  }
  return { stored, heads, size: at };
};

const readerOf = (stored: Map<string, Uint8Array[]>, reads: string[] = []) => ({
  async readTile(tile: TileId) {
    reads.push(tilePath(tile));
    const hashes = stored.get(tilePath(tile));
    return hashes === undefined ? undefined : Buffer.concat(hashes);
  },
});

const flipByte = (h: Uint8Array, at = 0) => {
  const copy = Uint8Array.from(h);
  copy[at % copy.length] = (copy[at % copy.length] as number) ^ 0x01;
  return copy;
};

const sizes = fc.integer({ min: 1, max: 2_000 });

describe('merkle properties', () => {
  it('every inclusion and consistency proof of a random tree verifies', async () => {
    await fc.assert(
      fc.asyncProperty(
        sizes,
        fc.integer(),
        fc.integer({ min: 0, max: 1999 }),
        async (n, seed, r) => {
          const { tree, leaves } = buildTree(seed, n);
          const size = 1 + (r % n); // an older tree size, too
          const root = tree.root(size);
          for (let i = 0; i < size; i++) {
            const path = await inclusionProof(tree, i, size);
            expect(verifyInclusion(leaves[i] as Uint8Array, i, size, path, root)).toBe(true);
          }
          for (let m = 0; m <= n; m++) {
            const path = await consistencyProof(tree, m, n);
            expect(verifyConsistency(m, n, path, tree.root(m), tree.root(n))).toBe(true);
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('the frontier kept by appends gives the same root as the whole tree, at every size', () => {
    fc.assert(
      fc.property(sizes, fc.integer(), (n, seed) => {
        const { tree, leaves } = buildTree(seed, n);
        let frontier: Uint8Array[] = [];
        const wrong: number[] = [];
        leaves.forEach((leaf, i) => {
          frontier = appendLeaf(frontier, i, leaf);
          if (!hashesEqual(frontierRoot(frontier, i + 1), tree.root(i + 1))) wrong.push(i + 1);
        });
        expect(wrong).toEqual([]);
        expect(frontier.map(hashToHex)).toEqual(tree.frontier().map(hashToHex));
      }),
      { numRuns: 20 },
    );
  });

  it('tiles written batch by batch equal the tree, and proofs from them equal proofs from memory', async () => {
    await fc.assert(
      fc.asyncProperty(
        sizes,
        fc.integer(),
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
        async (n, seed, batches, picks) => {
          const { tree, leaves } = buildTree(seed, n);
          const { stored, heads, size } = tilesByBatches(leaves, [...batches, n]);
          expect(size).toBe(n);
          // Proofs are asked at a signed head's size: the end of some batch.
          const [a = 0, b = 0, c = 0, d = 0] = picks;
          const to = heads[a % heads.length] as number;
          const from = heads[b % heads.length] as number;
          const [lo, hi] = from <= to ? [from, to] : [to, from];
          const reads: string[] = [];
          const source = new TileHashSource(readerOf(stored, reads), hi);
          const leafIndex = c % hi;
          expect(await inclusionProof(source, leafIndex, hi)).toEqual(
            await inclusionProof(tree, leafIndex, hi),
          );
          // One read per tile the plan names, all found at the head's width.
          expect(new Set(reads)).toEqual(new Set(tilesForInclusion(leafIndex, hi).map(tilePath)));
          const fresh = new TileHashSource(readerOf(stored), hi);
          expect(await consistencyProof(fresh, lo, hi)).toEqual(
            await consistencyProof(tree, lo, hi),
          );
          const other = d % (hi + 1);
          const third = new TileHashSource(readerOf(stored), hi);
          expect(await consistencyProof(third, other, hi)).toEqual(
            await consistencyProof(tree, other, hi),
          );
          expect(tilesForConsistency(other, hi).length).toBeLessThanOrEqual(16);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a tampered path element, index, size, leaf or root fails verification', async () => {
    await fc.assert(
      fc.asyncProperty(
        sizes,
        fc.integer(),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        async (n, seed, p, q, r) => {
          const { tree, leaves } = buildTree(seed, n + 5);
          const i = p % n;
          const leaf = leaves[i] as Uint8Array;
          const root = tree.root(n);
          const path = await inclusionProof(tree, i, n);
          if (path.length > 0) {
            const k = q % path.length;
            const bad = path.map((h, j) => (j === k ? flipByte(h, r) : h));
            expect(verifyInclusion(leaf, i, n, bad, root)).toBe(false);
            expect(verifyInclusion(leaf, i, n, path.slice(0, -1), root)).toBe(false);
            expect(verifyInclusion(leaf, (i + 1 + (r % (n - 1))) % n, n, path, root)).toBe(false);
          }
          // Another size, with that size's genuine root (a signed head binds the two).
          const n2 = n + 1 + (r % 5);
          expect(verifyInclusion(leaf, i, n2, path, tree.root(n2))).toBe(false);
          expect(verifyInclusion(flipByte(leaf, q), i, n, path, root)).toBe(false);
          expect(verifyInclusion(leaf, i, n, path, flipByte(root, q))).toBe(false);

          const m = 1 + (q % n);
          const old = tree.root(m);
          const proof = await consistencyProof(tree, m, n);
          if (proof.length > 0) {
            const k = r % proof.length;
            const bad = proof.map((h, j) => (j === k ? flipByte(h, p) : h));
            expect(verifyConsistency(m, n, bad, old, root)).toBe(false);
            expect(verifyConsistency(m, n, [...proof, root], old, root)).toBe(false);
          }
          if (m < n) {
            expect(verifyConsistency(m, n, proof, flipByte(old, r), root)).toBe(false);
            expect(verifyConsistency(m, n, proof, old, flipByte(root, r))).toBe(false);
            // Another old size, with its own genuine root: the proof does not fit it.
            const m2 = m === 1 ? 2 : m - 1;
            if (m2 < n) expect(verifyConsistency(m2, n, proof, tree.root(m2), root)).toBe(false);
          }
          // A history rewritten below m: the new tree's proof cannot connect to the old root.
          const forged = buildTree(seed + 1, n).tree;
          const forgedProof = await consistencyProof(forged, m, n);
          if (m < n) expect(verifyConsistency(m, n, forgedProof, old, forged.root())).toBe(false);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a tampered tile makes the proofs that read it fail verification', async () => {
    const { tree, leaves } = buildTree(7, 1_000);
    const { stored } = tilesByBatches(leaves, [1_000]);
    const victim = stored.get('tile/0/001') as Uint8Array[]; // leaves 256..511
    stored.set(
      'tile/0/001',
      victim.map((h, j) => (j === 3 ? nodeHash(h, h) : h)),
    );
    const source = new TileHashSource(readerOf(stored), 1_000);
    const path = await inclusionProof(source, 258, 1_000); // its sibling is leaf 259
    expect(verifyInclusion(leaves[258] as Uint8Array, 258, 1_000, path, tree.root())).toBe(false);
    // Leaf 700's proof takes leaves 256..511 from the level-1 tile: it is not affected.
    const untouched = await inclusionProof(source, 700, 1_000);
    expect(verifyInclusion(leaves[700] as Uint8Array, 700, 1_000, untouched, tree.root())).toBe(
      true,
    );
  });
});
