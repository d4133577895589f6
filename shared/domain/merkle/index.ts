/**
 * The verifiable ledger's Merkle tree (RFC 9162 §2.1) over a stream's chain hashes, its
 * tiles (C2SP tlog-tiles) and its proofs. Normative description: docs/proofs.md.
 */
export * from './frontier.js';
export * from './generate.js';
export * from './hash.js';
export * from './memory-tree.js';
export * from './proof-json.js';
export * from './shape.js';
export * from './tile-builder.js';
export * from './tile-source.js';
export * from './tiles.js';
export * from './verify.js';
