// The operator room (shared/operator/README.md): what the CLI's offline witness checks need.
export { LocalWitnessStore } from '../adapters/local/local-witness-store.js';
export type { WitnessStore } from '../ports/witness-store.js';
export { publishedHeads } from '../proofs/witness.js';
