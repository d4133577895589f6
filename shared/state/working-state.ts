import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import { InvalidDeltaError } from '../domain/errors.js';
import { sha256Hex } from '../domain/hashing.js';
import { applyOps, type DeltaOp, type JsonObject } from '../domain/state.js';
import { type DigestVersion, emptyStateDigest } from '../domain/state-digest.js';
import {
  type ChunkRef,
  countNodes,
  type Extent,
  MerkleState,
  NO_EXTENT,
  type ResolveRef,
  type StateOp,
} from '../domain/state-v2/index.js';
import { build } from '../domain/state-v2/node.js';
import { splitPointer, valueAt } from '../domain/state-v2/pointer.js';

/** Values set by ref, read from their chunks (values.ts readRefs), with their extents. */
export interface RefValues {
  resolve: ResolveRef;
  extentOf(ref: ChunkRef): Extent;
}

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
 *
 * `nodes` (JSON values) is kept up to date across ops, for the work budget (state-v2/budget.ts):
 * each op adds the values it sets and takes away those it replaces or deletes (walking only
 * them), so a checkpoint never walks the whole state to count it.
 */
export class WorkingState {
  readonly version: DigestVersion;
  #json: JsonObject;
  #merkle: MerkleState | undefined;
  /** v1: the canonical JSON and digest of the current state, when computed. */
  #jcs: string | undefined;
  #digest: string | undefined;
  /** JSON values in the state; undefined until counted (one walk, on first use). */
  #nodes: number | undefined;

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
    if (Object.keys(this.#json).length === 0) this.#nodes = 1;
  }

  /**
   * The working state of `state`, which the instance takes over (it is changed in place by
   * later ops). `digest`: a v1 digest already verified for it (saves hashing it again).
   */
  static of(state: JsonObject, version: DigestVersion, digest?: string): WorkingState {
    return new WorkingState(version, state, digest);
  }

  /** A v2 working state over a tree already built (and verified) elsewhere. */
  static ofTree(merkle: MerkleState, extent?: Extent): WorkingState {
    const working = new WorkingState(2, merkle.state, undefined, merkle);
    if (extent) working.#nodes = extent.nodes;
    return working;
  }

  static empty(version: DigestVersion): WorkingState {
    return new WorkingState(version, {}, emptyStateDigest(version));
  }

  /** The live JSON state: read it, never change it (apply ops instead). */
  get state(): JsonObject {
    return this.#json;
  }

  /** The logical size of the state: its JSON values and canonical bytes. */
  get extent(): Extent {
    this.#nodes ??= countNodes(this.#json);
    const bytes = this.#merkle ? this.#merkle.size : Buffer.byteLength(this.json(), 'utf8');
    return { nodes: this.#nodes, bytes };
  }

  /** Ops (values set by ref come from `refs`, each adopted by the first op naming it). */
  apply(ops: DeltaOp[], refs?: RefValues): this {
    this.#jcs = undefined;
    this.#digest = undefined;
    const counted = this.#nodes !== undefined;
    let nodes = this.#nodes ?? 0;
    const before = (op: StateOp) => {
      if (!counted) return;
      const segments = splitPointer(op.path);
      const old = segments && segments.length > 0 ? valueAt(this.#json, segments) : undefined;
      if (old !== undefined && !(op.op === 'set' && segments?.at(-1) === '-')) {
        nodes -= countNodes(old);
      }
      if (op.op !== 'set') return;
      nodes += 'ref' in op ? (refs?.extentOf(op.ref) ?? NO_EXTENT).nodes : countNodes(op.value);
    };
    // Once ops began to apply, the count is kept only if all of them did.
    this.#nodes = undefined;
    if (this.#merkle) this.#merkle.apply(ops as StateOp[], refs?.resolve, before);
    else {
      for (const [i, op] of ops.entries()) {
        before(op as StateOp);
        const plain = 'ref' in op ? valueOp(op as StateOp, refs) : op;
        try {
          applyOps(this.#json, [plain]);
        } catch (err) {
          if (err instanceof InvalidDeltaError) {
            throw new InvalidDeltaError(i, err.message.replace(/^op 0: /, ''));
          }
          throw err;
        }
      }
    }
    if (counted) this.#nodes = nodes;
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

/** A v1 state's op setting a value by ref: the value itself (v1 keeps no tree). */
const valueOp = (op: StateOp, refs: RefValues | undefined): DeltaOp => {
  if (!('ref' in op)) return op as DeltaOp;
  const resolved = refs?.resolve(op.ref);
  if (!resolved) throw new InvalidDeltaError(0, `ref ${op.ref.hash} is not resolved`);
  const value: JsonValue = resolved.taken
    ? structuredClone(resolved.node.value)
    : resolved.node.value;
  resolved.taken = true;
  return { op: 'set', path: op.path, value };
};
