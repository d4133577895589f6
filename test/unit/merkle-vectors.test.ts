import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  consistencyProof,
  EMPTY_ROOT,
  extendFrontier,
  frontierRoot,
  hashToHex,
  inclusionProof,
  leafHash,
  MemoryTree,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/domain/merkle/index.js';

/**
 * test/vectors/merkle.json: trees of 0..20 leaves, every root, inclusion and consistency
 * proof. Checked three ways: the implementation, an independent naive RFC 9162 recursion
 * written below (array slices, its own SHA-256 calls, nothing imported from the code under
 * test), and the RFC 6962 reference data published by Certificate Transparency.
 *
 * The vectors are written by the naive recursion: `HEFESTO_WRITE_VECTORS=1 npx vitest run
 * test/unit/merkle-vectors.test.ts` regenerates the file, then `npx biome format --write
 * test/vectors` (review the diff: it must not change).
 */

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '../vectors/merkle.json');
const MAX = 20;

// ---- The naive RFC 9162 §2.1 recursion (deliberately literal; no shared code) -------------

const H = (...parts: Uint8Array[]): Uint8Array => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
const ZERO = Uint8Array.of(0);
const ONE = Uint8Array.of(1);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (s: string) => new Uint8Array(Buffer.from(s, 'hex'));

/** k: the largest power of two smaller than n. */
const kOf = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

const MTH = (d: Uint8Array[]): Uint8Array => {
  if (d.length === 0) return H();
  if (d.length === 1) return H(ZERO, d[0] as Uint8Array);
  const k = kOf(d.length);
  return H(ONE, MTH(d.slice(0, k)), MTH(d.slice(k)));
};

const PATH = (m: number, d: Uint8Array[]): Uint8Array[] => {
  if (d.length === 1) return [];
  const k = kOf(d.length);
  return m < k
    ? [...PATH(m, d.slice(0, k)), MTH(d.slice(k))]
    : [...PATH(m - k, d.slice(k)), MTH(d.slice(0, k))];
};

const SUBPROOF = (m: number, d: Uint8Array[], b: boolean): Uint8Array[] => {
  if (m === d.length) return b ? [] : [MTH(d)];
  const k = kOf(d.length);
  return m <= k
    ? [...SUBPROOF(m, d.slice(0, k), b), MTH(d.slice(k))]
    : [...SUBPROOF(m - k, d.slice(k), false), MTH(d.slice(0, k))];
};

/** PROOF(m, D[n]), with this project's edges: from 0 or from = to is the empty proof. */
const PROOF = (m: number, d: Uint8Array[]): Uint8Array[] =>
  m === 0 || m === d.length ? [] : SUBPROOF(m, d, true);

// ---- The documented entries -----------------------------------------------------------------

/** d[i] = SHA-256(UTF-8 "hefesto/merkle-vector/" + decimal i): stands for event i+1's chain hash. */
const entry = (i: number) => H(new TextEncoder().encode(`hefesto/merkle-vector/${i}`));
const entries = Array.from({ length: MAX }, (_, i) => entry(i));

interface Vectors {
  entries: string[];
  leafHashes: string[];
  roots: string[];
  inclusion: Array<{ leafIndex: number; treeSize: number; path: string[] }>;
  consistency: Array<{ from: number; to: number; path: string[] }>;
}

const naiveVectors = (): Vectors => {
  const inclusion: Vectors['inclusion'] = [];
  const consistency: Vectors['consistency'] = [];
  for (let n = 0; n <= MAX; n++) {
    const d = entries.slice(0, n);
    for (let m = 0; m < n; m++)
      inclusion.push({ leafIndex: m, treeSize: n, path: PATH(m, d).map(hex) });
    for (let m = 0; m <= n; m++) consistency.push({ from: m, to: n, path: PROOF(m, d).map(hex) });
  }
  return {
    entries: entries.map(hex),
    leafHashes: entries.map((e) => hex(H(ZERO, e))),
    roots: Array.from({ length: MAX + 1 }, (_, n) => hex(MTH(entries.slice(0, n)))),
    inclusion,
    consistency,
  };
};

if (process.env.HEFESTO_WRITE_VECTORS === '1') {
  const doc = {
    description:
      'RFC 9162 section 2.1 Merkle tree test vectors for Hefesto (docs/proofs.md). SHA-256; leaf hash = SHA-256(0x00 || entry); node = SHA-256(0x01 || left || right); roots[n] = MTH of the first n entries (roots[0] = SHA-256 of the empty string). inclusion: every leafIndex < treeSize for treeSize 1..20, path in RFC order (the leaf sibling first). consistency: every 0 <= from <= to <= 20; from = 0 and from = to have the empty path.',
    entryDefinition: 'entries[i] = SHA-256(UTF-8 "hefesto/merkle-vector/" + decimal i), i = 0..19',
    ...naiveVectors(),
  };
  writeFileSync(VECTORS, `${JSON.stringify(doc, null, 2)}\n`);
}

const vectors = JSON.parse(readFileSync(VECTORS, 'utf8')) as Vectors;

const treeOf = (n: number) => {
  const tree = new MemoryTree();
  for (const e of entries.slice(0, n)) tree.append(leafHash(e));
  return tree;
};
const full = treeOf(MAX);

describe('merkle test vectors', () => {
  it('match the RFC 6962 reference tree heads and proofs (Certificate Transparency data)', async () => {
    // Data only, from the CT reference suites: 8 leaves of 0..16 bytes and their tree heads.
    const ct = [
      '',
      '00',
      '10',
      '2021',
      '3031',
      '40414243',
      '5051525354555657',
      '606162636465666768696a6b6c6d6e6f',
    ].map(unhex);
    const roots = [
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
      'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
      '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
      '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
      'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
      '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
    ];
    const tree = new MemoryTree();
    for (const d of ct) tree.append(leafHash(d));
    for (let n = 0; n <= ct.length; n++) {
      expect(hashToHex(tree.root(n)), `size ${n}`).toBe(roots[n]);
      expect(hex(MTH(ct.slice(0, n))), `naive size ${n}`).toBe(roots[n]);
    }
    const path0 = [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ];
    const path5 = [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ];
    expect((await inclusionProof(tree, 0, 8)).map(hashToHex)).toEqual(path0);
    expect((await inclusionProof(tree, 5, 8)).map(hashToHex)).toEqual(path5);
    expect((await consistencyProof(tree, 2, 8)).map(hashToHex)).toEqual(path0.slice(1));
    expect((await consistencyProof(tree, 2, 5)).map(hashToHex)).toEqual([path0[1], path5[0]]);
    expect((await consistencyProof(tree, 6, 8)).map(hashToHex)).toEqual([
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      ...path5.slice(1),
    ]);
  });

  it('define the entries and leaf hashes as docs/proofs.md says', () => {
    expect(vectors.entries).toEqual(entries.map(hex));
    expect(vectors.leafHashes).toEqual(entries.map((e) => hashToHex(leafHash(e))));
    expect(vectors.roots[0]).toBe(hashToHex(EMPTY_ROOT));
  });

  it('agree with the naive RFC 9162 recursion, item for item', () => {
    expect(vectors).toEqual({ ...naiveVectors(), ...pick(vectors) });
  });

  it('give every root of 0..20 leaves from the memory tree and from the frontier', () => {
    let frontier: Uint8Array[] = [];
    for (let n = 0; n <= MAX; n++) {
      expect(hashToHex(full.root(n)), `size ${n}`).toBe(vectors.roots[n]);
      expect(hashToHex(frontierRoot(frontier, n)), `frontier ${n}`).toBe(vectors.roots[n]);
      if (n < MAX) frontier = extendFrontier(frontier, n, [leafHash(entries[n] as Uint8Array)]);
    }
  });

  it('give every inclusion proof, and each verifies against its root', async () => {
    expect(vectors.inclusion).toHaveLength((MAX * (MAX + 1)) / 2);
    for (const v of vectors.inclusion) {
      const at = `${v.leafIndex}@${v.treeSize}`;
      expect((await inclusionProof(full, v.leafIndex, v.treeSize)).map(hashToHex), at).toEqual(
        v.path,
      );
      const leaf = unhex(vectors.leafHashes[v.leafIndex] as string);
      const root = unhex(vectors.roots[v.treeSize] as string);
      expect(verifyInclusion(leaf, v.leafIndex, v.treeSize, v.path.map(unhex), root), at).toBe(
        true,
      );
    }
  });

  it('give every consistency proof (size 0, from = to, from a power of two), and each verifies', async () => {
    expect(vectors.consistency).toHaveLength(((MAX + 1) * (MAX + 2)) / 2);
    const kinds = { fromZero: 0, same: 0, powerOfTwo: 0, other: 0 };
    for (const v of vectors.consistency) {
      const at = `${v.from}->${v.to}`;
      expect((await consistencyProof(full, v.from, v.to)).map(hashToHex), at).toEqual(v.path);
      const [r1, r2] = [
        unhex(vectors.roots[v.from] as string),
        unhex(vectors.roots[v.to] as string),
      ];
      expect(verifyConsistency(v.from, v.to, v.path.map(unhex), r1, r2), at).toBe(true);
      if (v.from === 0) kinds.fromZero++;
      else if (v.from === v.to) kinds.same++;
      else if ((v.from & (v.from - 1)) === 0) kinds.powerOfTwo++;
      else kinds.other++;
      if (v.from === 0 || v.from === v.to) expect(v.path, at).toEqual([]);
    }
    expect(kinds).toEqual({ fromZero: 21, same: 20, powerOfTwo: 69, other: 121 });
  });

  it('are refused with any path element flipped, or the wrong index, size or root', () => {
    const flip = (h: string) => `${h[0] === '0' ? '1' : '0'}${h.slice(1)}`;
    for (const v of vectors.inclusion) {
      const leaf = unhex(vectors.leafHashes[v.leafIndex] as string);
      const root = unhex(vectors.roots[v.treeSize] as string);
      const path = v.path.map(unhex);
      v.path.forEach((_, i) => {
        const bad = v.path.map((h, j) => unhex(i === j ? flip(h) : h));
        expect(verifyInclusion(leaf, v.leafIndex, v.treeSize, bad, root)).toBe(false);
      });
      if (v.treeSize > 1) {
        const other = (v.leafIndex + 1) % v.treeSize;
        expect(verifyInclusion(leaf, other, v.treeSize, path, root)).toBe(false);
      }
      // A wrong size is refused against that size's root (the signed head binds size and root).
      if (v.treeSize < MAX) {
        const next = unhex(vectors.roots[v.treeSize + 1] as string);
        expect(verifyInclusion(leaf, v.leafIndex, v.treeSize + 1, path, next)).toBe(false);
      }
      const otherLeaf = unhex(vectors.leafHashes[(v.leafIndex + 1) % MAX] as string);
      expect(verifyInclusion(otherLeaf, v.leafIndex, v.treeSize, path, root)).toBe(false);
      expect(verifyInclusion(leaf, v.leafIndex, v.treeSize, path, EMPTY_ROOT)).toBe(false);
      expect(verifyInclusion(leaf, v.leafIndex, v.treeSize, [...path, root], root)).toBe(false);
    }
    for (const v of vectors.consistency) {
      const [r1, r2] = [
        unhex(vectors.roots[v.from] as string),
        unhex(vectors.roots[v.to] as string),
      ];
      const path = v.path.map(unhex);
      v.path.forEach((_, i) => {
        const bad = v.path.map((h, j) => unhex(i === j ? flip(h) : h));
        expect(verifyConsistency(v.from, v.to, bad, r1, r2), `${v.from}->${v.to} #${i}`).toBe(
          false,
        );
      });
      if (v.from > 0 && v.to < MAX) {
        // (From 0, the empty proof does prove every size: any tree extends the empty one.)
        const next = unhex(vectors.roots[v.to + 1] as string);
        expect(verifyConsistency(v.from, v.to + 1, path, r1, next)).toBe(false);
      }
      if (v.from > 1 && v.from < v.to) {
        const prev = unhex(vectors.roots[v.from - 1] as string);
        expect(verifyConsistency(v.from - 1, v.to, path, prev, r2)).toBe(false);
      }
      expect(verifyConsistency(v.from, v.to, [...path, r2], r1, r2)).toBe(false);
      if (v.from > 0 && v.from !== v.to) {
        expect(verifyConsistency(v.from, v.to, path, r1, r1)).toBe(false);
      }
      if (v.from > 0) expect(verifyConsistency(v.from, v.to, path, EMPTY_ROOT, r2)).toBe(false);
    }
  });
});

/** The free-text members of the file, which the naive generator does not compute. */
function pick(v: Vectors) {
  const { description, entryDefinition } = v as unknown as Record<string, string>;
  return { description, entryDefinition };
}
