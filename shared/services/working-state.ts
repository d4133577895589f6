import { canonicalJson } from '../domain/canonical.js';
import { sha256Hex } from '../domain/hashing.js';
import { applyOps, type DeltaOp, type JsonObject } from '../domain/state.js';
import { type DigestVersion, emptyStateDigest } from '../domain/state-digest.js';
import { MerkleState } from '../domain/state-v2/index.js';
import { build } from '../domain/state-v2/node.js';

/**
 * A stream's state while the service works on it (a checkpoint, a hydration), with what its
 * digest version needs to hash it:
 *
 * - v1: the JSON alone; the digest hashes the canonical JSON of the whole state, which is
 *   kept to write a base snapshot without serializing twice.
 * - v2: a MerkleState, the per-node hashes beside the JSON, so applying a delta re-hashes
 *   only the paths its ops touch (shared/domain/state-v2/merkle-state.ts). Built once from a
 *   hydrated state; kept across checkpoints in the warm cache (checkpoint.ts StateCache).
 *
 * Ops apply IN PLACE, as v1's applyOps does: a throw leaves the instance half-applied and the
 * caller discards it.
 */
export class WorkingState {
  readonly version: DigestVersion;
  #json: JsonObject;
  #merkle: MerkleState | undefined;
  /** v1: the canonical JSON and digest of the current state, when computed. */
  #jcs: string | undefined;
  #digest: string | undefined;

  private constructor(
    version: DigestVersion,
    state: JsonObject,
    digest?: string,
    merkle?: MerkleState,
  ) {
    this.version = version;
    // v2 takes the object as the tree's own JSON (no copy): the caller hands it over.
    this.#merkle = version === 2 ? (merkle ?? MerkleState.fromNode(build(state, 0)[0])) : undefined;
    this.#json = this.#merkle ? this.#merkle.state : state;
    this.#digest = version === 1 ? digest : undefined;
  }

  /**
   * The working state of `state`, which the instance takes over (it is changed in place by
   * later ops). `digest`: a v1 digest already verified for it (saves hashing it again).
   */
  static of(state: JsonObject, version: DigestVersion, digest?: string): WorkingState {
    return new WorkingState(version, state, digest);
  }

  /** A v2 working state over a tree already built (and verified) elsewhere. */
  static ofTree(merkle: MerkleState): WorkingState {
    return new WorkingState(2, merkle.state, undefined, merkle);
  }

  static empty(version: DigestVersion): WorkingState {
    return new WorkingState(version, {}, emptyStateDigest(version));
  }

  /** The live JSON state: read it, never change it (apply ops instead). */
  get state(): JsonObject {
    return this.#json;
  }

  apply(ops: DeltaOp[]): this {
    this.#jcs = undefined;
    this.#digest = undefined;
    if (this.#merkle) this.#merkle.apply(ops);
    else applyOps(this.#json, ops);
    return this;
  }

  /** v2: the Merkle tree (for proofs); v1 has none. */
  get tree(): MerkleState | undefined {
    return this.#merkle;
  }

  /** The state digest under this stream's version. */
  get digest(): string {
    if (this.#merkle) return this.#merkle.digest();
    this.#digest ??= sha256Hex(this.json());
    return this.#digest;
  }

  /** RFC 8785 canonical JSON of the state (base snapshots). */
  json(): string {
    if (this.#merkle) return canonicalJson(this.#json);
    this.#jcs ??= canonicalJson(this.#json);
    return this.#jcs;
  }
}
