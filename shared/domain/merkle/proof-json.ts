import { InvalidFormatError, InvalidInputError } from '../errors.js';
import { hashToHex, hexToHash } from './hash.js';
import { isSize } from './shape.js';
import { MAX_PATH_LENGTH } from './verify.js';

/**
 * The JSON shapes of proofs (docs/proofs.md) and the mapping between a stream's seqs and the
 * tree's leaves. Parsers fail closed (`InvalidFormatError`) on anything but the exact shape:
 * they read what an untrusted server sent. Unknown fields are ignored (they prove nothing and
 * let a later server add some).
 */

/** `GET /v1/streams/{id}/proofs/inclusion?seq=&treeSize=` */
export interface InclusionProofJson {
  leafIndex: number;
  treeSize: number;
  path: string[];
}

/** `GET /v1/streams/{id}/proofs/consistency?from=&to=` */
export interface ConsistencyProofJson {
  from: number;
  to: number;
  path: string[];
}

/** Leaf index of event `seq` in a tree whose first leaf follows `treeBase` (records-v2 `treeBase`). */
export const leafIndexOf = (seq: number, treeBase: number): number => {
  if (!isSize(seq) || !isSize(treeBase) || seq <= treeBase) {
    throw new InvalidInputError(`seq ${seq} is not in a tree starting after seq ${treeBase}`);
  }
  return seq - treeBase - 1;
};

/** The seq of leaf `leafIndex`. */
export const seqOfLeaf = (leafIndex: number, treeBase: number): number => treeBase + leafIndex + 1;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const parsePath = (path: unknown, what: string): Uint8Array[] => {
  if (!Array.isArray(path) || path.length > MAX_PATH_LENGTH) {
    throw new InvalidFormatError(
      `${what}.path must be an array of at most ${MAX_PATH_LENGTH} hashes`,
    );
  }
  return path.map((h, i) => hexToHash(h, `${what}.path[${i}]`));
};

const size = (v: unknown, what: string): number => {
  if (!isSize(v)) throw new InvalidFormatError(`${what} must be an integer 0..2^53-1`);
  return v;
};

export const parseInclusionProof = (
  value: unknown,
): { leafIndex: number; treeSize: number; path: Uint8Array[] } => {
  if (!isObject(value)) throw new InvalidFormatError('inclusion proof is not an object');
  return {
    leafIndex: size(value.leafIndex, 'leafIndex'),
    treeSize: size(value.treeSize, 'treeSize'),
    path: parsePath(value.path, 'inclusion proof'),
  };
};

export const parseConsistencyProof = (
  value: unknown,
): { from: number; to: number; path: Uint8Array[] } => {
  if (!isObject(value)) throw new InvalidFormatError('consistency proof is not an object');
  return {
    from: size(value.from, 'from'),
    to: size(value.to, 'to'),
    path: parsePath(value.path, 'consistency proof'),
  };
};

export const inclusionProofJson = (
  leafIndex: number,
  treeSize: number,
  path: readonly Uint8Array[],
): InclusionProofJson => ({ leafIndex, treeSize, path: path.map(hashToHex) });

export const consistencyProofJson = (
  from: number,
  to: number,
  path: readonly Uint8Array[],
): ConsistencyProofJson => ({ from, to, path: path.map(hashToHex) });
