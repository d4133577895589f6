import type { JsonValue } from '../domain/canonical.js';
import { InvalidInputError, NotFoundError, PrunedError } from '../domain/errors.js';
import { type DigestVersion, digestVersionOf } from '../domain/state-digest.js';
import {
  boundedSource,
  type MerkleState,
  proveFromChunks,
  proveState,
  readAt,
  type StateProof,
} from '../domain/state-v2/index.js';
import { splitPointer, valueAt } from '../domain/state-v2/pointer.js';
import type { StateCache } from './checkpoint.js';
import type { StateStore } from './state.js';
import { storedOrigin } from './state-origin.js';

/**
 * Reads of one value of a stream's state by RFC 6901 pointer (`GET .../state?path=`), and
 * with `proof` its Merkle path (docs/state-v2.md, "Reads by path and proofs"), so a client
 * checks the value against the state digest the hash chain records, without the rest of the
 * state. An array is entered only at a canonical index below its length, an object only at
 * an own member; a path the state does not hold is ErrNotFound (404). Proofs exist only for
 * state digest v2: a v1 stream's digest covers the whole state (400).
 *
 * What a v2 read reads, cheapest first (the head is always read and checked against the
 * chain end):
 *   1. the head's state warm in this process (the checkpoint cache): nothing more;
 *   2. a stored base snapshot or fork origin that is the state at `at` (state-origin.ts):
 *      its root object, then only the chunks on the path (and the value's own chunks when it
 *      is a node), each checked against its hash, the root against the chain's digest;
 *   3. otherwise (deltas after the base): the state is hydrated and verified whole, as for a
 *      whole read, and the value and proof are taken from its tree. Applying the deltas to
 *      a tree that loads only the chunks they touch is not built (docs/state-v2.md).
 * v1 streams are always hydrated.
 */

export interface StateValue {
  seq: number;
  stateDigest: string;
  digestVersion: DigestVersion;
  path: string;
  value: JsonValue;
  proof?: StateProof;
}

export interface StateValueRequest {
  tenant: string;
  stream: string;
  at?: number;
  path: string;
  proof?: boolean;
}

export interface StateReadOptions {
  /** The process's warm head states (Checkpointer.cache). */
  cache?: StateCache;
}

const fromTree = (
  tree: MerkleState,
  segments: string[],
  req: StateValueRequest,
): { value: JsonValue; proof?: StateProof } => {
  if (req.proof) {
    const proof = proveState(tree, req.path);
    return { value: proof.value, proof };
  }
  const value = valueAt(tree.state, segments);
  if (value === undefined) throw new NotFoundError(`the state holds no value at ${req.path}`);
  return { value };
};

export const readStateValue = async (
  states: StateStore,
  req: StateValueRequest,
  options: StateReadOptions = {},
): Promise<StateValue> => {
  const segments = splitPointer(req.path);
  if (segments === undefined || segments.length === 0) {
    throw new InvalidInputError('path must be a JSON Pointer below the root, like /messages/3');
  }
  const { tenant, stream } = req;
  const head = await states.reader.head(tenant, stream);
  const at = req.at ?? head.seq;
  const answer = { seq: at, digestVersion: 2 as const, path: req.path };
  if (digestVersionOf(head) === 2 && Number.isSafeInteger(at) && at >= 1 && at <= head.seq) {
    if (head.prunedSeq !== undefined && at < head.prunedSeq) {
      throw new PrunedError(stream, head.prunedSeq);
    }
    // The head must match the chain end before anything is answered from it.
    const [origin] = await Promise.all([
      at >= head.stateSeq && options.cache?.peek(tenant, stream, head.stateDigest)
        ? undefined
        : storedOrigin(states, tenant, stream, at, head),
      states.reader.checkHead(tenant, stream, head),
    ]);
    // Peeked again after the last await: from here on nothing yields, so no checkpoint can
    // take the warm tree and change it while the value is read from it.
    const warm =
      at >= head.stateSeq ? options.cache?.peek(tenant, stream, head.stateDigest) : undefined;
    const tree = warm?.tree;
    if (tree) return { ...answer, stateDigest: head.stateDigest, ...fromTree(tree, segments, req) };
    if (origin && 'tree' in origin) {
      return { ...answer, stateDigest: origin.digest, ...fromTree(origin.tree, segments, req) };
    }
    if (origin) {
      const { chunks } = states;
      const fetched = new Map<string, Uint8Array>();
      const source = boundedSource(chunks.source(tenant, fetched), chunks.concurrency);
      // The digest is the chain's, so chunks that hash to it are canonical (read.ts).
      const read = { seq: Math.max(1, origin.seq), canonical: false };
      let found: { value: JsonValue; proof?: StateProof };
      if (req.proof) {
        const proof = await proveFromChunks(origin.digest, req.path, source, read);
        found = { value: proof.value, proof };
      } else found = { value: await readAt(origin.digest, req.path, source, read) };
      chunks.remember(tenant, fetched);
      return { ...answer, stateDigest: origin.digest, ...found };
    }
  }
  const hydrated = await states.hydrate(tenant, stream, req.at);
  const { working } = hydrated;
  const base = {
    seq: hydrated.seq,
    stateDigest: hydrated.stateDigest,
    digestVersion: working.version,
    path: req.path,
  };
  if (req.proof && !working.tree) {
    throw new InvalidInputError(
      `stream ${stream} uses state digest v1, which covers the whole state: no proof by path`,
    );
  }
  if (working.tree) return { ...base, ...fromTree(working.tree, segments, req) };
  const value = valueAt(working.state, segments);
  if (value === undefined) throw new NotFoundError(`the state holds no value at ${req.path}`);
  return { ...base, value };
};
