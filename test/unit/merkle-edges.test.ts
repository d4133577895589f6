import { describe, expect, it } from 'vitest';
import { InvalidFormatError, InvalidInputError } from '../../shared/domain/errors.js';
import { sha256 } from '../../shared/domain/hashing.js';
import {
  appendLeaf,
  consistencyProof,
  consistencyRanges,
  EMPTY_ROOT,
  frontierNodes,
  type HashSource,
  inclusionProof,
  inclusionRanges,
  leafHash,
  leafIndexOf,
  MAX_PATH_LENGTH,
  MemoryTree,
  type NodeId,
  nodeHash,
  parseConsistencyProof,
  parseInclusionProof,
  rootFromInclusionProof,
  seqOfLeaf,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/domain/merkle/index.js';

/**
 * Every leaf the same hash: the hash of any perfect subtree of 2^k leaves is known without
 * building anything, so trees of 2^40 leaves and more can be proven and verified for real.
 */
const uniformSource = (): HashSource & { levels: Uint8Array[] } => {
  const levels = [leafHash(sha256('same leaf'))];
  const at = (level: number) => {
    while (levels.length <= level) {
      const below = levels[levels.length - 1] as Uint8Array;
      levels.push(nodeHash(below, below));
    }
    return levels[level] as Uint8Array;
  };
  return { levels, nodeHashes: async (nodes: readonly NodeId[]) => nodes.map((n) => at(n.level)) };
};

describe('merkle edges', () => {
  it('computes proofs and verifies them past 2^32 leaves (no 32-bit arithmetic)', async () => {
    const source = uniformSource();
    for (const size of [2 ** 32 + 1, 2 ** 40 + 12_345, 2 ** 53 - 1]) {
      const root = await treeRoot(source, size);
      const leaf = source.levels[0] as Uint8Array;
      for (const index of [0, 2 ** 31 + 7, size - 2, size - 1]) {
        const path = await inclusionProof(source, index, size);
        expect(verifyInclusion(leaf, index, size, path, root), `${index}@${size}`).toBe(true);
      }
      for (const from of [1, 2 ** 32, size - 1]) {
        const path = await consistencyProof(source, from, size);
        const old = await treeRoot(source, from);
        expect(verifyConsistency(from, size, path, old, root), `${from}->${size}`).toBe(true);
        expect(verifyConsistency(from, size, path.slice(1), old, root)).toBe(false);
      }
    }
    expect(frontierNodes(2 ** 40 + 3)).toEqual([
      { level: 40, index: 0 },
      { level: 1, index: 2 ** 39 },
      { level: 0, index: 2 ** 40 + 2 },
    ]);
  });

  it('refuses sizes and indexes out of range when generating', () => {
    expect(() => inclusionRanges(3, 3)).toThrow(InvalidInputError);
    expect(() => inclusionRanges(-1, 3)).toThrow(InvalidInputError);
    expect(() => inclusionRanges(0.5, 3)).toThrow(InvalidInputError);
    expect(() => inclusionRanges(0, 2 ** 53)).toThrow(InvalidInputError);
    expect(() => consistencyRanges(4, 3)).toThrow(InvalidInputError);
    expect(consistencyRanges(0, 9)).toEqual([]);
    expect(consistencyRanges(9, 9)).toEqual([]);
  });

  it('refuses hashes that are not 32 bytes instead of hashing stale bytes', () => {
    const h = sha256('x');
    expect(() => nodeHash(h.subarray(0, 31), h)).toThrow(InvalidInputError);
    expect(() => new MemoryTree().append(h.subarray(0, 31))).toThrow(InvalidInputError);
    expect(() => appendLeaf([], 0, new Uint8Array(33))).toThrow(InvalidInputError);
    const tree = new MemoryTree();
    for (let i = 0; i < 4; i++) tree.append(leafHash(sha256(`l${i}`)));
    const leaf = leafHash(sha256('l0'));
    expect(verifyInclusion(leaf.subarray(1), 0, 4, [], tree.root())).toBe(false);
    expect(verifyInclusion(leaf, 0, 4, [h, h.subarray(0, 31)], tree.root())).toBe(false);
    expect(verifyConsistency(2, 4, [new Uint8Array(31)], tree.root(2), tree.root())).toBe(false);
  });

  it('refuses paths longer than any tree needs without reading them', () => {
    const long = Array.from({ length: MAX_PATH_LENGTH + 1 }, () => EMPTY_ROOT);
    expect(rootFromInclusionProof(EMPTY_ROOT, 0, 2 ** 53 - 1, long)).toBeUndefined();
    expect(verifyConsistency(1, 2 ** 53 - 1, long, EMPTY_ROOT, EMPTY_ROOT)).toBe(false);
    expect(() =>
      parseInclusionProof({ leafIndex: 0, treeSize: 1, path: long.map(() => 'ab'.repeat(32)) }),
    ).toThrow(InvalidFormatError);
  });

  it('refuses a hash source that answers the wrong number of hashes', async () => {
    const short: HashSource = { nodeHashes: async (nodes) => nodes.slice(1).map(() => EMPTY_ROOT) };
    await expect(inclusionProof(short, 3, 10)).rejects.toThrow(InvalidFormatError);
  });

  it('parses the proof JSON shapes exactly (fail closed), ignoring unknown fields', () => {
    const hex = 'ab'.repeat(32);
    expect(parseInclusionProof({ leafIndex: 1, treeSize: 2, path: [hex], extra: 1 })).toMatchObject(
      {
        leafIndex: 1,
        treeSize: 2,
      },
    );
    expect(parseConsistencyProof({ from: 0, to: 2, path: [] })).toEqual({
      from: 0,
      to: 2,
      path: [],
    });
    for (const bad of [
      null,
      { leafIndex: '1', treeSize: 2, path: [] },
      { leafIndex: 1, treeSize: 2, path: [hex.toUpperCase()] },
      { leafIndex: 1, treeSize: 2, path: 'x' },
      { leafIndex: -1, treeSize: 2, path: [] },
    ]) {
      expect(() => parseInclusionProof(bad)).toThrow(InvalidFormatError);
    }
    expect(() => parseConsistencyProof({ from: 1, to: 2 })).toThrow(InvalidFormatError);
  });

  it('maps seqs to leaves through treeBase', () => {
    expect(leafIndexOf(1, 0)).toBe(0);
    expect(leafIndexOf(1_001, 1_000)).toBe(0);
    expect(seqOfLeaf(0, 1_000)).toBe(1_001);
    expect(() => leafIndexOf(1_000, 1_000)).toThrow(InvalidInputError);
    expect(() => leafIndexOf(0, 0)).toThrow(InvalidInputError);
  });
});
