import type { AppendResponse, HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import type { Appender, ChainHead } from '../commit/append.js';
import type { CheckpointLabels } from '../commit/labels.js';
import type { JsonValue } from '../domain/canonical.js';
import {
  DivergenceError,
  InvalidInputError,
  LabelExistsError,
  SchemaTooNewError,
  SeqConflictError,
  StreamExistsError,
} from '../domain/errors.js';
import type { WritesBinding } from '../domain/pending-writes.js';
import type { SignedTreeHead } from '../domain/signed-head.js';
import {
  appliesOps,
  DELTA_EVENT,
  type DeltaOp,
  type DeltaPayload,
  type ExpiryHint,
  FORK_EVENT,
  type ForkPayload,
  MIGRATION_EVENT,
} from '../domain/state.js';
import {
  digestOfState,
  digestVersionOf,
  emptyStateDigest,
  NEW_STREAM_DIGEST_VERSION,
} from '../domain/state-digest.js';
import { schemaVersionOf } from '../domain/state-schema.js';
import {
  checkBudget,
  countNodes,
  type Extent,
  memoryOf,
  NO_EXTENT,
  plus,
} from '../domain/state-v2/index.js';
import type { MemoryAccount, MemoryPool, Reclaimable } from './memory-pool.js';
import type { StateStore } from './state.js';
import { hasRefs } from './values.js';
import { WorkingState } from './working-state.js';

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
 * the digest; it never holds the head or another append. The commit's transaction also
 * writes a base-due marker for that seq (commit-extras.ts), so if the request dies before the
 * base is written, the compactor writes it from the marker (compactor.ts #writeDueBases);
 * hydration never writes a base, it only starts from an older one meanwhile.
 *
 * Digests follow the head's `digestVersion` (records-v2): a stream created now is v2 (the
 * Merkle digest, re-hashing only the paths the ops touch, from the tree kept in the warm
 * cache), a stream written before keeps v1 for ever, and a fork is v2 whatever its source.
 * The divergence trap compares digests of the stream's own version.
 *
 * Payload v2 (docs/records-v2.md), written when a request names any of `label`, `meta`,
 * `parentLabel` or `baseSeq`:
 * - `label` (unique in the stream: checked here, and `notExists` in the commit transaction,
 *   which also writes the label and list records: labels.ts), `meta`, `parentLabel`;
 * - `baseSeq`: the state-setting seq whose state the ops apply to. At the head's state (or
 *   absent) the checkpoint is linear, trapped on the head's digest as in v1. Below it, a
 *   branch (time travel): `baseDigest` must be the digest recorded at `baseSeq`, the state
 *   there is hydrated, and the result becomes the head state (one linear ledger).
 * - `depth`: depth of `baseSeq`'s state + 1 (0 at the K-th delta, where the base snapshot is
 *   written). Base snapshots keep v1's cadence (every K deltas) until state v2 moves it to
 *   depth; hydration follows baseSeq links either way (state.ts).
 */

/** Appends a binding checkpoint tries before giving up (each on a head that moved). */
const MAX_BINDING_ATTEMPTS = 16;

/** What a checkpoint does to pending writes (frozen-writes.ts). */
export interface WritesStep {
  /** The label of the checkpoint it leaves: their writes freeze. */
  leaves?: string;
  /** The binding of the writes of the checkpoint frozen before. */
  binding?: WritesBinding;
}

export interface CheckpointRequest {
  tenant: string;
  stream: string;
  ops: DeltaOp[];
  baseDigest: string;
  stateDigest?: string;
  idempotency?: { key: string; digest: string };
  /** The stream's incarnation the request was first sent to (append-model.ts). */
  incarnation?: string;
  /** The writer's lease epoch; a checkpoint is also refused while the stream drains. */
  fence?: number;
  /** v2: the state-setting seq the ops apply to (default: the head's state). */
  baseSeq?: number;
  /** v2: the checkpoint's label, unique in the stream (LABEL_PATTERN). */
  label?: string;
  /** v2: small JSON kept on the label and list records (≤ 16 KiB canonical). */
  meta?: JsonValue;
  /** v2: the label of the checkpoint this one continues. */
  parentLabel?: string;
  /** The schema version of the state the ops yield (docs/schema-evolution.md); absent: 1. */
  schema?: number;
  /**
   * Written as a `hefesto.migration`: the ops turn the state of schema version `from` (the
   * version at the head's state, checked here) into version `to`. Linear only.
   */
  migration?: { from: number; to: number };
  /**
   * A session history's clear (shared/history, never a client's field): the delta records
   * `clear: true` and its commit marks the head's `clearedSeq`, where the chain is cut.
   */
  clear?: true;
  /** v2: the compactor's hint of expiring entries (domain/expiry-hint.ts), checked. */
  expiry?: ExpiryHint;
  /** The request's share of the process's memory (memory-pool.ts); none: not counted. */
  memory?: MemoryAccount;
}

export interface CheckpointResult {
  seq: number;
  stateDigest: string;
  replayed: boolean;
  /** The receipt: the signed tree head after the checkpoint (append.ts). */
  treeHead?: SignedTreeHead;
  /** The stream's incarnation it was committed in. */
  incarnation?: string;
}

export interface ForkRequest {
  tenant: string;
  source: string;
  at: number;
  newStreamId: string;
  idempotency?: { key: string; digest: string };
  /** The request's share of the process's memory (memory-pool.ts). */
  memory?: MemoryAccount;
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
 * place) and put back only after a successful commit. A v2 entry keeps its Merkle tree (the
 * hash of every node), so the next checkpoint re-hashes only the paths its ops touch.
 *
 * Bounded by entries and by the memory its states take (memoryOf their logical extent: JSON
 * values and canonical bytes), which counts in the process's memory pool (memory-pool.ts):
 * a state taken out is the taking request's memory, a state put back is handed over from the
 * request, and the pool takes entries back (oldest first) when requests need the memory. A
 * state larger than the whole cache is not kept.
 */
export class StateCache implements Reclaimable {
  readonly #entries = new Map<string, { digest: string; state: WorkingState; memory: number }>();
  #held = 0;

  constructor(
    readonly maxEntries = 256,
    readonly maxMemory = 256 * 1024 * 1024,
    readonly memory?: MemoryPool,
  ) {
    memory?.register(this);
  }

  /** Memory the entries take now (memoryOf their extents). */
  get held(): number {
    return this.#held;
  }

  reclaim(bytes: number): void {
    let freed = 0;
    for (const [key, entry] of this.#entries) {
      if (freed >= bytes) break;
      this.#drop(key);
      freed += entry.memory;
    }
  }

  /** The entry of `digest`, taken out: its memory is `memory`'s (the taking request's) now. */
  take(
    tenant: string,
    stream: string,
    digest: string,
    memory?: MemoryAccount,
  ): WorkingState | undefined {
    const key = `${tenant}\u0000${stream}`;
    const entry = this.#entries.get(key);
    this.#drop(key);
    if (entry?.digest !== digest) return undefined;
    memory?.adopt(entry.memory);
    return entry.state;
  }

  /**
   * The entry of `digest` left in place, for a read (state-read.ts): use it synchronously and
   * never change it, since a checkpoint may take it at the next await.
   */
  peek(tenant: string, stream: string, digest: string): WorkingState | undefined {
    const entry = this.#entries.get(`${tenant}\u0000${stream}`);
    return entry?.digest === digest ? entry.state : undefined;
  }

  /** Keeps `state` (built by the request of `account`, whose memory it takes over). */
  put(
    tenant: string,
    stream: string,
    digest: string,
    state: WorkingState,
    account?: MemoryAccount,
  ): void {
    const key = `${tenant}\u0000${stream}`;
    this.#drop(key);
    const memory = memoryOf(state.extent);
    // The request built it: its memory is the cache's from here (or nobody's, if not kept).
    account?.handOver(memory);
    if (memory > this.maxMemory) return;
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size < this.maxEntries && this.#held + memory <= this.maxMemory) break;
      this.#drop(oldest);
    }
    if (this.memory && !this.memory.tryHold(this, memory)) return;
    this.#entries.set(key, { digest, state, memory });
    this.#held += memory;
  }

  #drop(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#held -= entry.memory;
  }
}

export interface CheckpointerOptions {
  appender: Appender;
  states: StateStore;
  reader: Reader;
  labels: CheckpointLabels;
  /**
   * The checkpoint a commit leaves (its writes freeze) and the binding of the one left before
   * (frozen-writes.ts); none: writes are not bound (unit tests of checkpoints alone).
   */
  writes?: {
    prepare(tenant: string, stream: string, head: HeadRecord): Promise<WritesStep>;
  };
  cache?: StateCache;
  /** Called when a base snapshot could not be written (the request still succeeds). */
  onSnapshotError?: (err: unknown) => void;
}

export class Checkpointer {
  readonly #o: CheckpointerOptions & { cache: StateCache };

  constructor(options: CheckpointerOptions) {
    this.#o = { cache: new StateCache(), ...options };
  }

  /** The warm states of this process's streams (reads by path use them too). */
  get cache(): StateCache {
    return this.#o.cache;
  }

  async checkpoint(req: CheckpointRequest): Promise<CheckpointResult> {
    const { appender, states, cache, labels } = this.#o;
    const base = { tenant: req.tenant, stream: req.stream, idempotency: req.idempotency };
    // Head first, then the idempotency record: the order the appender relies on (a request
    // committed between the two reads is seen by the second), so it can skip both reads.
    const head = await appender.readHead(req.tenant, req.stream);
    appender.checkLife(req, head);
    const stored = await appender.storedResult({ ...base, events: [] }, head);
    if (stored) return this.#replayed(stored.response);
    // Checked after the head read: a label committed before it is seen here, so the commit's
    // own `notExists` only meets a concurrent writer (and then refuses the whole commit).
    if (req.label !== undefined && (await labels.exists(req.tenant, req.stream, req.label))) {
      throw new LabelExistsError(req.label);
    }
    const linear = req.baseSeq === undefined || req.baseSeq === head.stateSeq;
    if (req.migration) await this.#checkMigration(req, req.migration, head, linear);
    // Values set by ref are measured from their chunks first (their logical size, against the
    // work budget), so a value that would not fit is refused before any state is built.
    const { budget } = states;
    const measured = hasRefs(req.ops)
      ? await states.values.measureRefs(req.tenant, req.ops, {
          budget,
          client: true,
          memory: req.memory,
        })
      : undefined;
    // What the commit does to pending writes: read meanwhile (frozen-writes.ts).
    const writes =
      this.#o.writes && head.exists
        ? this.#o.writes.prepare(req.tenant, req.stream, head)
        : undefined;
    writes?.catch(() => {}); // awaited by the commit; a checkpoint refused before leaves it
    const from = linear ? await this.#headState(req, head) : await this.#branchBase(req, head);
    // The state and everything the ops set are held at once while the ops apply.
    checkBudget(
      plus(plus(from.state.extent, measured?.extent ?? NO_EXTENT), inlineExtent(req.ops)),
      budget,
      'the state with the values this checkpoint sets',
    );
    const refs = measured ? await states.values.readRefs(req.tenant, req.ops, measured) : undefined;
    const next = from.state.apply(req.ops, refs);
    const stateDigest = next.digest;
    if (req.stateDigest !== undefined && req.stateDigest !== stateDigest) {
      throw new DivergenceError('stateDigest is not what the ops yield', head.seq + 1, stateDigest);
    }
    // The stream's references to its values, only now that the checkpoint is known good, and
    // taken back if its commit does not happen (values.ts hold).
    const held = measured
      ? await states.values.hold(req.tenant, req.stream, measured, head.exists ? head.seq : 0)
      : undefined;
    let outcome: Awaited<ReturnType<Appender['append']>>;
    try {
      outcome = await this.#commit(req, head, linear, stateDigest, from.depth, writes);
    } catch (err) {
      await held?.release();
      throw err;
    }
    if (outcome.replayed) return this.#replayed(outcome.response);
    // A migration adds no delta: the K-th delta's commit wrote the base of this count.
    const deltas = req.migration ? undefined : outcome.deltas;
    if (deltas !== undefined && deltas % states.snapshotEvery === 0) {
      // From the tree itself (v2): no serializing the state, and the values set by ref are
      // chunks already stored (seen under `measured.gen`), so the base writes only the rest.
      // Before the cache holds the tree, so no other checkpoint changes it meanwhile.
      const stored =
        measured?.gen !== undefined && measured.gen % 2 === 0
          ? { gen: measured.gen, hashes: new Set(measured.byHash.keys()) }
          : undefined;
      await states
        .writeSnapshot(req.tenant, req.stream, {
          seq: outcome.response.lastSeq,
          hash: outcome.response.head.hash,
          stateDigest,
          stateJson: next.tree ? '' : next.json(),
          ...(next.tree ? { tree: next.tree } : {}),
          deltas: outcome.deltas,
          digestVersion: next.version,
          stateSeq: outcome.response.lastSeq,
          ...(stored ? { stored } : {}),
          keyHead: head, // read before this commit: seq 0 (a new stream) makes it read again
        })
        .catch((err: unknown) => this.#o.onSnapshotError?.(err));
    }
    cache.put(req.tenant, req.stream, stateDigest, next, req.memory);
    const { treeHead, incarnation } = outcome.response;
    return { seq: outcome.response.lastSeq, stateDigest, replayed: false, treeHead, incarnation };
  }

  /**
   * The append. A checkpoint leaving a labelled checkpoint freezes its writes, and binds those
   * of the checkpoint left before (frozen-writes.ts): their digest is read for this head, so
   * the delta is committed exactly at its seq + 1, else digested again on the head as it is
   * then (a linear checkpoint whose base state moved meanwhile diverged).
   */
  async #commit(
    req: CheckpointRequest,
    first: ChainHead,
    linear: boolean,
    stateDigest: string,
    depth: number,
    prepared: Promise<WritesStep> | undefined,
  ): Promise<Awaited<ReturnType<Appender['append']>>> {
    const { appender, writes } = this.#o;
    let head = first;
    for (let attempt = 1; ; attempt++) {
      const step: WritesStep =
        attempt === 1
          ? ((await prepared) ?? {})
          : writes && head.exists
            ? await writes.prepare(req.tenant, req.stream, head)
            : {};
      // What it freezes and binds was read for this head: committed right after it or not
      // (a branch too: nothing else keeps the head's state from moving meanwhile).
      const exact =
        step.leaves !== undefined ||
        step.binding !== undefined ||
        (!linear && writes !== undefined);
      // A migration adds no delta: it never resets the depth (no base is written at it).
      const deltasAfter = linear && !req.migration ? head.deltas + 1 : 0;
      const payload = this.#payload(req, stateDigest, depth, deltasAfter, step);
      try {
        return await appender.append({
          tenant: req.tenant,
          stream: req.stream,
          idempotency: req.idempotency,
          events: [
            { type: req.migration ? MIGRATION_EVENT : DELTA_EVENT, payload: payload as never },
          ],
          expectedStateDigest: linear ? req.baseDigest : undefined,
          ...(exact ? { expectedSeq: head.seq } : {}),
          // The head read before the idempotency record (the order storedResult needs).
          ...(attempt === 1 ? { knownHead: head } : {}),
          incarnation: req.incarnation,
          fence: req.fence === undefined ? undefined : { epoch: req.fence, checkpoint: true },
        });
      } catch (err) {
        if (!(exact && err instanceof SeqConflictError) || attempt >= MAX_BINDING_ATTEMPTS) {
          throw err;
        }
        head = await appender.readHead(req.tenant, req.stream);
        appender.checkLife(req, head);
      }
    }
  }

  /** The head's state, for a linear checkpoint (the divergence trap on the head digest). */
  async #headState(req: CheckpointRequest, head: ChainHead) {
    if (head.stateDigest !== req.baseDigest) throw DivergenceError.staleBase(head);
    const { states, cache } = this.#o;
    const version = digestVersionOf(head);
    const state =
      cache.take(req.tenant, req.stream, head.stateDigest, req.memory) ??
      (head.exists
        ? (await states.hydrate(req.tenant, req.stream, head.seq, { memory: req.memory })).working
        : WorkingState.empty(version));
    return { state, depth: head.stateDepth ?? head.deltas % states.snapshotEvery };
  }

  /**
   * The state at `baseSeq` below the head's, for a branch: it must be a state-setting seq
   * (a delta, a fork, or 0) at or above the pruning point (else 400, nothing written), and
   * `baseDigest` the digest recorded there (else the divergence trap).
   */
  async #branchBase(req: CheckpointRequest, head: ChainHead) {
    const at = req.baseSeq ?? 0;
    const floor = head.prunedSeq ?? 0;
    if (at > head.stateSeq || at < floor || (at === 0 && floor > 0)) {
      throw new InvalidInputError(
        `baseSeq must be a checkpoint seq between ${floor} and ${head.stateSeq}`,
      );
    }
    if (at === 0) {
      const version = digestVersionOf(head);
      if (req.baseDigest !== emptyStateDigest(version)) {
        throw new DivergenceError('baseDigest is not the digest of the empty state', 0);
      }
      return { state: WorkingState.empty(version), depth: 0 };
    }
    const [event] = (
      await this.#o.reader.readEvents(req.tenant, req.stream, { from: at, limit: 1 })
    ).events;
    if (event?.seq !== at || (!appliesOps(event.type) && event.type !== FORK_EVENT)) {
      throw new InvalidInputError(
        `baseSeq ${at} is not a checkpoint (a delta, a migration or a fork)`,
      );
    }
    const recorded = (event.payload as { stateDigest?: unknown }).stateDigest;
    if (recorded !== req.baseDigest) {
      throw new DivergenceError(
        `baseDigest is not the state digest recorded at seq ${at}`,
        at,
        typeof recorded === 'string' ? recorded : undefined,
      );
    }
    const hydrated = await this.#o.states.hydrate(req.tenant, req.stream, at, {
      memory: req.memory,
    });
    return { state: hydrated.working, depth: hydrated.depth };
  }

  /**
   * A migration's `from` must be the schema version of the head's state, read from the event
   * that set it (one event read, on a migration only): a migration that lost a race to another
   * one to `to` or beyond is refused (ErrSchemaTooNew), so the chain never claims a version
   * the state does not have. Checked after the idempotency record: a retry gets its answer.
   */
  async #checkMigration(
    req: CheckpointRequest,
    migration: { from: number; to: number },
    head: ChainHead,
    linear: boolean,
  ): Promise<void> {
    if (!linear) throw new InvalidInputError('a migration applies to the head state (no baseSeq)');
    // readSpan: retention keeps the segment holding stateSeq even past the pruning point.
    const current =
      head.stateSeq > 0
        ? await this.#schemaAt(req.tenant, req.stream, head.stateSeq)
        : migration.from;
    if (current >= migration.to) throw new SchemaTooNewError(current, migration.to);
    if (current !== migration.from) {
      throw new InvalidInputError(
        `migration from version ${migration.from}: the state is at schema version ${current}`,
      );
    }
  }

  /** The schema version of the state set at `stateSeq` (1 when none, or unknown). */
  async #schemaAt(tenant: string, stream: string, stateSeq: number | undefined): Promise<number> {
    if (!stateSeq) return 1;
    const [event] = await this.#o.reader.readSpan(tenant, stream, stateSeq, stateSeq);
    return event ? schemaVersionOf(event) : 1;
  }

  /** The event payload: v1 unless the request uses a v2 field (or binds writes). */
  #payload(
    req: CheckpointRequest,
    stateDigest: string,
    baseDepth: number,
    deltasAfter: number,
    writes: WritesStep,
  ) {
    const v1: DeltaPayload = { ops: req.ops, baseDigest: req.baseDigest, stateDigest };
    const v2 =
      writes.leaves !== undefined ||
      writes.binding !== undefined ||
      hasRefs(req.ops) ||
      req.baseSeq !== undefined ||
      req.label !== undefined ||
      req.meta !== undefined ||
      req.parentLabel !== undefined ||
      req.schema !== undefined ||
      req.migration !== undefined ||
      req.clear !== undefined ||
      req.expiry !== undefined;
    if (!v2) return v1;
    const reset = deltasAfter > 0 && deltasAfter % this.#o.states.snapshotEvery === 0;
    return {
      v: 2,
      ops: req.ops,
      ...(req.baseSeq === undefined ? {} : { baseSeq: req.baseSeq }),
      baseDigest: req.baseDigest,
      stateDigest,
      depth: reset ? 0 : baseDepth + 1,
      ...(req.label === undefined ? {} : { label: req.label }),
      ...(req.meta === undefined ? {} : { meta: req.meta }),
      ...(req.parentLabel === undefined ? {} : { parentLabel: req.parentLabel }),
      // Its own writes are bound once it is left (frozen-writes.ts).
      ...(req.label !== undefined && this.#o.writes ? { writesBound: true as const } : {}),
      ...(writes.leaves === undefined ? {} : { leaves: writes.leaves }),
      ...(writes.binding ? { pendingWrites: writes.binding } : {}),
      ...(req.schema === undefined ? {} : { schema: req.schema }),
      ...(req.migration ? { from: req.migration.from, to: req.migration.to } : {}),
      ...(req.clear ? { clear: true as const } : {}),
      ...(req.expiry ? { expiry: req.expiry } : {}),
    } satisfies DeltaPayload & { from?: number; to?: number };
  }

  #replayed(response: AppendResponse): CheckpointResult {
    const { lastSeq, stateDigest, treeHead, incarnation } = response;
    return { seq: lastSeq, stateDigest: stateDigest ?? '', replayed: true, treeHead, incarnation };
  }

  /** A new stream whose state at its start is the source's state at `at`. */
  async fork(req: ForkRequest): Promise<ForkResult> {
    const { appender, states } = this.#o;
    const stream = req.newStreamId;
    // The target's head first, then its idempotency record (the order storedResult needs).
    const target = await appender.readHead(req.tenant, stream);
    const stored = await appender.storedResult(
      { tenant: req.tenant, stream, idempotency: req.idempotency, events: [] },
      target,
    );
    if (stored) {
      const origin = await states.forkOrigin(req.tenant, stream);
      return this.#forkResult(req, stored.response, origin, true);
    }
    // Refuse an existing target before writing anything under it (a 4xx stores nothing). A
    // stream created between this read and the append below still gets 409 from the append;
    // the snapshot object written for it meanwhile is then the only leftover.
    if (target.exists && target.seq > 0) throw new StreamExistsError(stream);
    const origin = await states.hydrate(req.tenant, req.source, req.at, { memory: req.memory });
    // The new stream is v2 whatever the source's version: its digest is taken again.
    const version = NEW_STREAM_DIGEST_VERSION;
    const stateDigest =
      origin.working.version === version
        ? origin.stateDigest
        : digestOfState(origin.state, version);
    // A v2 source's tree as it is (no rebuild from its JSON); a v1 source is built whole.
    const written = await states.writeForkOrigin(req.tenant, stream, {
      source: req.source,
      state: origin.working.tree ?? origin.state,
      stateDigest,
    });
    const schema = await this.#schemaAt(req.tenant, req.source, origin.stateSeq);
    const payload: ForkPayload = {
      source: { streamId: req.source, seq: origin.seq, hash: origin.hash },
      stateDigest,
      ...written.fields,
      digestVersion: version,
      ...(schema > 1 ? { schema } : {}),
    };
    try {
      const outcome = await appender.append({
        tenant: req.tenant,
        stream,
        events: [{ type: FORK_EVENT, payload: payload as never }],
        expectedSeq: 0,
        idempotency: req.idempotency,
      });
      await written.confirm();
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

/** JSON values the ops set inline (their bytes are bounded by the request body's limit). */
const inlineExtent = (ops: readonly DeltaOp[]): Extent => {
  let nodes = 0;
  for (const op of ops) if (op.op === 'set' && 'value' in op) nodes += countNodes(op.value);
  return { nodes, bytes: 0 };
};
