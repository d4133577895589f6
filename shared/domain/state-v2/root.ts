import type { MerkleState } from './merkle-state.js';

/**
 * The root descriptor of a state stored as chunks: what a snapshot v2 object (or a fork)
 * records instead of the state's bytes. The digest is the root chunk's key, so the
 * descriptor names every chunk of the state through it; `size` (canonical JSON bytes) lets
 * a reader refuse a state over its limits before reading a chunk.
 */
export interface StateRoot {
  format: 'hefesto.state';
  v: 2;
  digest: string;
  size: number;
}

export const describeRoot = (state: MerkleState): StateRoot => ({
  format: 'hefesto.state',
  v: 2,
  digest: state.digest(),
  size: state.size,
});
