import { canonicalJson } from '../domain/canonical.js';
import { DivergenceError, SeqConflictError, StreamExistsError } from '../domain/errors.js';
import { genesisHash } from '../domain/event.js';
import { sha256Hex } from '../domain/hashing.js';
import type { SignedTreeHead } from '../domain/signed-head.js';
import {
  applyOps,
  DELTA_EVENT,
  type DeltaOp,
  type DeltaPayload,
  FORK_EVENT,
  type ForkPayload,
  type JsonObject,
} from '../domain/state.js';
import type { Appender } from './append.js';
import type { AppendResponse } from './layout.js';
import type { StateStore } from './state.js';

/**
 * Delta checkpoints and forks.
 *
 * A checkpoint is one `hefesto.delta` ledger event {ops, baseDigest, stateDigest}, appended
 * through the same commit protocol as any event (hash-chained, idempotent), with one extra
 * condition: the head's state digest must still be `baseDigest` (the divergence trap). The
 * head's digest moves in the same transaction that moves the head.
 *
 * Base snapshots: the request that commits the K-th delta writes the full state as its own
 * object (put-if-absent) after the commit, from the canonical JSON it already computed for
 * the digest; it never holds the head or another append. If it dies first, the next
 * hydration that applies K deltas writes the missing base.
 */

export interface CheckpointRequest {
  tenant: string;
  stream: string;
  ops: DeltaOp[];
  baseDigest: string;
  stateDigest?: string;
  idempotency?: { key: string; digest: string };
  /** The writer's lease epoch; a checkpoint is also refused while the stream drains. */
  fence?: number;
}

export interface CheckpointResult {
  seq: number;
  stateDigest: string;
  replayed: boolean;
  /** The receipt: the signed tree head after the checkpoint (append.ts). */
  treeHead?: SignedTreeHead;
}

export interface ForkRequest {
  tenant: string;
  source: string;
  at: number;
  newStreamId: string;
  idempotency?: { key: string; digest: string };
}

export interface ForkResult {
  streamId: string;
  seq: number;
  stateDigest: string;
  source: { streamId: string; seq: number; hash: string };
  replayed: boolean;
}

/**
 * The latest state of recently checkpointed streams, keyed by digest, so a warm process does
 * not hydrate before every checkpoint. Entries are taken out while in use (ops apply in
 * place) and put back only after a successful commit.
 */
export class StateCache {
  readonly #entries = new Map<string, { digest: string; state: JsonObject }>();

  constructor(readonly maxEntries = 256) {}

  take(tenant: string, stream: string, digest: string): JsonObject | undefined {
    const key = `${tenant}\u0000${stream}`;
    const entry = this.#entries.get(key);
    this.#entries.delete(key);
    return entry?.digest === digest ? entry.state : undefined;
  }

  put(tenant: string, stream: string, digest: string, state: JsonObject): void {
    const key = `${tenant}\u0000${stream}`;
    this.#entries.delete(key);
    this.#entries.set(key, { digest, state });
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

export interface CheckpointerOptions {
  appender: Appender;
  states: StateStore;
  cache?: StateCache;
  /** Called when a base snapshot could not be written (the request still succeeds). */
  onSnapshotError?: (err: unknown) => void;
}

export class Checkpointer {
  readonly #o: CheckpointerOptions & { cache: StateCache };

  constructor(options: CheckpointerOptions) {
    this.#o = { cache: new StateCache(), ...options };
  }

  async checkpoint(req: CheckpointRequest): Promise<CheckpointResult> {
    const { appender, states, cache } = this.#o;
    const base = { tenant: req.tenant, stream: req.stream, idempotency: req.idempotency };
    // Head first, then the idempotency record: the order the appender relies on (a request
    // committed between the two reads is seen by the second), so it can skip both reads.
    const head = await appender.readHead(req.tenant, req.stream);
    const stored = await appender.storedResult({ ...base, events: [] });
    if (stored) return this.#replayed(stored.response);
    if (head.stateDigest !== req.baseDigest) {
      throw DivergenceError.staleBase(head);
    }
    const current =
      cache.take(req.tenant, req.stream, head.stateDigest) ??
      (head.exists ? (await states.hydrate(req.tenant, req.stream, head.seq)).state : {});
    const next = applyOps(current, req.ops);
    const stateJson = canonicalJson(next);
    const stateDigest = sha256Hex(stateJson);
    if (req.stateDigest !== undefined && req.stateDigest !== stateDigest) {
      throw new DivergenceError('stateDigest is not what the ops yield', head.seq + 1, stateDigest);
    }
    const payload: DeltaPayload = { ops: req.ops, baseDigest: req.baseDigest, stateDigest };
    const outcome = await appender.append({
      ...base,
      events: [{ type: DELTA_EVENT, payload: payload as never }],
      expectedStateDigest: req.baseDigest,
      knownHead: head,
      fence: req.fence === undefined ? undefined : { epoch: req.fence, checkpoint: true },
    });
    if (outcome.replayed) return this.#replayed(outcome.response);
    cache.put(req.tenant, req.stream, stateDigest, next);
    if (outcome.deltas !== undefined && outcome.deltas % states.snapshotEvery === 0) {
      await states
        .writeSnapshot(req.tenant, req.stream, {
          seq: outcome.response.lastSeq,
          hash: outcome.response.head.hash,
          stateDigest,
          stateJson,
          deltas: outcome.deltas,
        })
        .catch((err: unknown) => this.#o.onSnapshotError?.(err));
    }
    const { treeHead } = outcome.response;
    return { seq: outcome.response.lastSeq, stateDigest, replayed: false, treeHead };
  }

  #replayed(response: AppendResponse): CheckpointResult {
    const { lastSeq, stateDigest, treeHead } = response;
    return { seq: lastSeq, stateDigest: stateDigest ?? '', replayed: true, treeHead };
  }

  /** A new stream whose state at its start is the source's state at `at`. */
  async fork(req: ForkRequest): Promise<ForkResult> {
    const { appender, states } = this.#o;
    const stream = req.newStreamId;
    const stored = await appender.storedResult({
      tenant: req.tenant,
      stream,
      idempotency: req.idempotency,
      events: [],
    });
    if (stored) {
      const origin = await states.forkOrigin(req.tenant, stream);
      return this.#forkResult(req, stored.response, origin, true);
    }
    const origin = await states.hydrate(req.tenant, req.source, req.at);
    const snapshotKey = await states.writeSnapshotObject(req.tenant, stream, {
      seq: 0,
      hash: genesisHash(req.tenant, stream),
      stateDigest: origin.stateDigest,
      stateJson: canonicalJson(origin.state),
    });
    const payload: ForkPayload = {
      source: { streamId: req.source, seq: origin.seq, hash: origin.hash },
      stateDigest: origin.stateDigest,
      snapshotKey,
    };
    try {
      const outcome = await appender.append({
        tenant: req.tenant,
        stream,
        events: [{ type: FORK_EVENT, payload: payload as never }],
        expectedSeq: 0,
        idempotency: req.idempotency,
      });
      return this.#forkResult(req, outcome.response, payload.source, outcome.replayed);
    } catch (err) {
      if (err instanceof SeqConflictError) throw new StreamExistsError(stream);
      throw err;
    }
  }

  #forkResult(
    req: ForkRequest,
    response: { lastSeq: number; stateDigest?: string },
    source: ForkResult['source'],
    replayed: boolean,
  ): ForkResult {
    return {
      streamId: req.newStreamId,
      seq: response.lastSeq,
      stateDigest: response.stateDigest ?? '',
      source,
      replayed,
    };
  }
}
