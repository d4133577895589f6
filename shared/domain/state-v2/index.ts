/**
 * State v2 (docs/state-v2.md): the Merkle state digest, its incremental form, chunks for
 * content-addressed snapshots and large values, reads by path and Merkle path proofs.
 * Pure code (hashing only), shared by the server and the client SDK.
 */

export {
  checkBudget,
  countNodes,
  DEFAULT_WORK_BUDGET,
  type Extent,
  memoryOf,
  NO_EXTENT,
  plus,
  type WorkBudget,
} from './budget.js';
export { parseChunk, verifyChunk } from './chunk-parse.js';
export {
  type Chunk,
  chunkHashes,
  chunksOfValue,
  eachChunk,
  eachChunkHash,
  listChunks,
} from './chunks.js';
export {
  ARRAY_FANOUT,
  INLINE_MAX,
  MAX_CHUNK_BYTES,
  MAX_DEPTH,
  MAX_KEY_BYTES,
  MAX_VALUE_BYTES,
  OBJECT_MAX_FANOUT,
  STRING_PAGE,
  VERSION as STATE_DIGEST_VERSION,
} from './format.js';
export { type MeasureOptions, measureValue } from './measure.js';
export { digestV2, EMPTY_STATE_DIGEST_V2, MerkleState } from './merkle-state.js';
export { hashValue } from './node.js';
export {
  type ChunkRef,
  checkStateOps,
  isRefOp,
  type ResolvedValue,
  type ResolveRef,
  refsOf,
  type StateOp,
} from './ops.js';
export {
  type ProofCheck,
  proveFromChunks,
  proveState,
  type StateProof,
  verifyProof,
} from './proof.js';
export { readState, readValue } from './read.js';
export { describeRoot, type StateRoot } from './root.js';
export {
  boundedSource,
  type ChunkSource,
  type ReadOptions,
  type VerifiedChunk,
} from './source.js';
export { readAt, type Walk, walk } from './walk.js';
