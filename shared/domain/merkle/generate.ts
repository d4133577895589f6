import { InvalidFormatError } from '../errors.js';
import { foldRange } from './frontier.js';
import {
  checkSize,
  consistencyRanges,
  inclusionRanges,
  type LeafRange,
  type NodeId,
  rangeNodes,
} from './shape.js';

/**
 * Proof generation from a HashSource: the proof's shape is computed first (pure), then every
 * perfect-subtree hash it needs is asked for in one batch, so a source backed by tiles can
 * fetch all its tiles at once and never reads the stream.
 */

/**
 * Where the hashes of perfect subtrees come from: memory (tests, benchmarks, a client that
 * read the whole stream) or tiles in the object store (the server).
 */
export interface HashSource {
  /** The hashes of the perfect subtrees `nodes`, in the same order. */
  nodeHashes(nodes: readonly NodeId[]): Promise<Uint8Array[]>;
}

/** The perfect subtrees whose hashes make up the MTHs of `ranges`, with where each range's run ends. */
const plan = (ranges: readonly LeafRange[]) => {
  const nodes: NodeId[] = [];
  const ends: number[] = [];
  for (const range of ranges) {
    nodes.push(...rangeNodes(range.start, range.end));
    ends.push(nodes.length);
  }
  return { nodes, ends };
};

const rangeHashes = async (
  source: HashSource,
  ranges: readonly LeafRange[],
): Promise<Uint8Array[]> => {
  const { nodes, ends } = plan(ranges);
  const hashes = nodes.length === 0 ? [] : await source.nodeHashes(nodes);
  if (hashes.length !== nodes.length) {
    throw new InvalidFormatError(`hash source answered ${hashes.length} of ${nodes.length} hashes`);
  }
  const out: Uint8Array[] = [];
  let start = 0;
  for (const end of ends) {
    out.push(foldRange(hashes.slice(start, end)));
    start = end;
  }
  return out;
};

/** The perfect subtrees an inclusion proof is computed from (for planning tile reads). */
export const inclusionProofNodes = (leafIndex: number, treeSize: number): NodeId[] =>
  plan(inclusionRanges(leafIndex, treeSize)).nodes;

/** The perfect subtrees a consistency proof is computed from. */
export const consistencyProofNodes = (from: number, to: number): NodeId[] =>
  plan(consistencyRanges(from, to)).nodes;

/** RFC 9162 §2.1.3.1: the inclusion proof of leaf `leafIndex` in the tree of `treeSize`. */
export const inclusionProof = (
  source: HashSource,
  leafIndex: number,
  treeSize: number,
): Promise<Uint8Array[]> => rangeHashes(source, inclusionRanges(leafIndex, treeSize));

/** RFC 9162 §2.1.4.1: the consistency proof from tree size `from` to `to` (empty for 0 and from = to). */
export const consistencyProof = (
  source: HashSource,
  from: number,
  to: number,
): Promise<Uint8Array[]> => rangeHashes(source, consistencyRanges(from, to));

/** MTH(D[0:size]) from the source: the root at an older size, e.g. to check a served proof. */
export const treeRoot = async (source: HashSource, size: number): Promise<Uint8Array> => {
  checkSize(size, 'size');
  const [root] = await rangeHashes(source, [{ start: 0, end: size }]);
  return root as Uint8Array;
};
