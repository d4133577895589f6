import type { HeadRecord } from '../chain/layout.js';
import type { JsonValue } from '../domain/canonical.js';
import {
  InvalidDeltaError,
  InvalidInputError,
  NotFoundError,
  PrunedError,
} from '../domain/errors.js';
import type { DeltaPayload } from '../domain/state.js';
import { type DigestVersion, digestVersionOf } from '../domain/state-digest.js';
import {
  boundedSource,
  type MerkleState,
  proveFromChunks,
  proveState,
  readAt,
  type StateProof,
} from '../domain/state-v2/index.js';
import { applyPartial, loadPartial, provePartial } from '../domain/state-v2/partial.js';
import { splitPointer, valueAt } from '../domain/state-v2/pointer.js';
import type { StateCache } from './checkpoint.js';
import type { MemoryAccount } from './memory-pool.js';
import { type StateStore, tamperedAs } from './state.js';
import { type Origin, storedOrigin } from './state-origin.js';
import { hasRefs } from './values.js';

/**
 * Reads of one value of a stream's state by RFC 6901 pointer (`GET .../state?path=`), and
 * with `proof` its Merkle path (docs/state-v2.md, "Reads by path and proofs"), so a client
 * checks the value against the state digest the hash chain records, without the rest of the
 * state. An array is entered only at a canonical index below its length, an object only at
 * an own member; a path the state does not hold is ErrNotFound (404). Proofs exist only for
 * state digest v2: a v1 stream's digest covers the whole state (400).
 *
 * What a v2 read reads, cheapest first (the head is always read and checked against the
 * chain end; docs/state-v2.md, "As built"):
 *   1. the head's state warm in this process (the checkpoint cache): nothing more;
 *   2. a stored base snapshot or fork origin at or below `at`, tied to the chain, and the
 *      verified events after it (state-origin.ts); with no delta after it, its root object
 *      and only the chunks on the path (and the value's own chunks when it is a node), each
 *      checked against its hash;
 *   3. with deltas after it, those deltas applied to a partial tree that loads only the
 *      containers their ops edit and the path (state-v2/partial.ts), each delta re-hashed to
 *      the digest it recorded;
 *   4. otherwise (a value set by ref, a branch to an older seq, anything that does not add
 *      up): the state hydrated and verified whole, as for a whole read.
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
  /** The request's share of the process's memory (memory-pool.ts), for a whole hydration. */
  memory?: MemoryAccount;
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

/**
 * The value (and proof) at `req.path` from a stored origin: the chunks on the path when no
 * delta follows it, else the deltas applied to a partial tree (partial.ts) that loads only the
 * chunks their ops and the path go through, each delta re-hashed to the digest it recorded.
 * Undefined when a delta cannot be replayed that way (a value set by ref, a branch to an older
 * seq, a digest that does not match): the caller hydrates, which reports any divergence.
 */
const fromOrigin = async (
  states: StateStore,
  req: StateValueRequest,
  origin: Origin,
  head: HeadRecord | undefined,
): Promise<{ stateDigest: string; value: JsonValue; proof?: StateProof } | undefined> => {
  const { chunks } = states;
  const fetched = new Map<string, Uint8Array>();
  const source = boundedSource(chunks.source(req.tenant, fetched), chunks.concurrency);
  // The digests are the chain's, so chunks that hash to them are canonical (read.ts).
  const read = { seq: Math.max(1, origin.seq), canonical: false };
  let found: { stateDigest: string; value: JsonValue; proof?: StateProof };
  if (origin.deltas.length === 0 && !origin.tree) {
    if (req.proof) {
      const proof = await proveFromChunks(origin.digest, req.path, source, read);
      found = { stateDigest: origin.digest, value: proof.value, proof };
    } else {
      const value = await readAt(origin.digest, req.path, source, read);
      found = { stateDigest: origin.digest, value };
    }
  } else {
    const state = origin.tree ?? (await loadPartial(origin.digest, source, read));
    let digest = origin.digest;
    let stateSeq = origin.seq;
    for (const event of origin.deltas) {
      const payload = event.payload as unknown as DeltaPayload;
      if (payload.baseDigest !== digest || hasRefs(payload.ops)) return undefined;
      if (payload.baseSeq !== undefined && payload.baseSeq !== stateSeq) return undefined;
      try {
        const at = { seq: event.seq, canonical: false };
        if (!(await applyPartial(state, payload.ops, source, at))) return undefined;
      } catch (err) {
        if (err instanceof InvalidDeltaError) return undefined;
        throw err;
      }
      if (state.digest() !== payload.stateDigest) return undefined;
      digest = payload.stateDigest;
      stateSeq = event.seq;
    }
    if (head && digest !== head.stateDigest) return undefined;
    const proof = await provePartial(state, req.path, source, read);
    found = { stateDigest: digest, value: proof.value, ...(req.proof ? { proof } : {}) };
  }
  chunks.remember(req.tenant, fetched);
  return found;
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
    if (origin) {
      // Its chunks are the base's or the fork origin's: a bad one is that object's.
      const found = await fromOrigin(
        states,
        req,
        origin,
        at >= head.stateSeq ? head : undefined,
      ).catch(tamperedAs(origin.object, origin.object === 'fork-origin' ? 0 : origin.seq));
      if (found) return { ...answer, ...found };
    }
  }
  const hydrated = await states.hydrate(tenant, stream, req.at, { memory: req.memory });
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
