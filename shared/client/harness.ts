import { canonicalJson } from '../domain/canonical.js';
import { sha256Hex } from '../domain/hashing.js';
import { applyOps, FORK_EVENT, type JsonObject } from '../domain/state.js';
import {
  type DigestVersion,
  digestOfState,
  digestVersionOf,
  emptyStateDigest,
  NEW_STREAM_DIGEST_VERSION,
} from '../domain/state-digest.js';
import { schemaVersionOf } from '../domain/state-schema.js';
import type { HefestoClient } from './client.js';
import { runEffect } from './effect-run.js';
import { DivergenceDetectedError, HefestoApiError, SchemaTooNewError } from './errors.js';
import { canonicalBytes, INLINE_BUDGET_BYTES, pickByRef, type SetRefOp } from './large-values.js';
import { replayStart, type StateSchema, schemaOf, upcast } from './schema-migration.js';
import type { DeltaOp, Json, JsonValueOf, LedgerEvent } from './types.js';

/**
 * A durable agent run: the harness that makes "resume at turn N+1 without repeating work or
 * calling the model again" one line of code.
 *
 * A turn is the work between two checkpoints: the agent observes (model outputs, tool
 * results) and then checkpoints its state change. Observations are recorded as ledger
 * events `{turn, name, index, value}` *before* the agent sees them, under an Idempotency-Key
 * derived from (stream, turn, name, index); checkpoints under one derived from (stream,
 * turn). So:
 * - a worker that dies after calling the model but before recording loses only that call;
 * - one that dies after recording never repeats it: the next worker gets the recorded value;
 * - one that dies after checkpointing resumes at the next turn.
 * Every write names the stream's incarnation the run started in (Hefesto-Incarnation; for a
 * new stream, the one its first write created), so the keys of a run never reach another life
 * of the stream: a run whose stream was deleted (and maybe created again) under it fails with
 * ErrStreamRecreated, and a new run on a deleted id starts a new life whose keys are its own.
 */

/**
 * The ledger event type of recorded observations.
 *
 * @example
 * ```ts
 * const { events } = await client.readEvents('run-1', { type: OBSERVATION_TYPE });
 * ```
 */
export const OBSERVATION_TYPE = 'observation';

interface Observation {
  turn: number;
  name: string;
  index: number;
  value: Json;
  /** The schema version of the worker that recorded it, when above 1. */
  schema?: number;
}

/**
 * Options of {@link resume}.
 *
 * @example
 * ```ts
 * const run = await resume(client, 'run-1', { replay: true });
 * ```
 */
export interface ResumeOptions {
  /**
   * Hold the stream's lease while running: acquired on resume (a new epoch), renewed in the
   * background every ttlMs / 3, sent as the fencing token of every write. When another
   * worker takes over, the next write fails with ErrFenced and the run stops. Exclusive by
   * default: while it is held, writes to the stream without its epoch are refused.
   */
  lease?: { owner: string; ttlMs?: number; exclusive?: boolean };
  /**
   * Re-run the agent from turn 1: observations come from the ledger instead of the model,
   * and each replayed turn's state digest must equal the recorded one (else
   * DivergenceDetectedError naming the turn). Default: start at the head (turn N+1).
   */
  replay?: boolean;
  /**
   * A set op whose value's canonical JSON is larger than this many bytes is uploaded as
   * chunks first ({@link HefestoClient.putValue}) and sent by ref, so a turn may set a value
   * far larger than one request (up to `maxValueBytes`); then the largest of the others go
   * by ref too until the values sent inline add up to {@link INLINE_BUDGET_BYTES}, so a turn
   * always fits the server's limit on a checkpoint's ops (256 KiB). The digest is computed
   * from the value either way. Default {@link INLINE_BUDGET_BYTES} (192 KiB).
   */
  largeValueBytes?: number;
  /**
   * The schema version of the state this worker reads and writes, and upcasters from older
   * ones (docs/schema-evolution.md). A run at an older version is upcast step by step and the
   * result committed as one `hefesto.migration` (two resumers at once commit one); a run at a
   * newer version is refused (SchemaTooNewError); a missing step, UpcasterMissingError.
   * Default: version 1, no upcasters (a stream that never declared a version is at 1).
   */
  schema?: StateSchema;
}

/**
 * Set ops above this canonical size go by ref unless told otherwise: the inline budget of a
 * call, below the server's 256 KiB limit on a checkpoint's ops.
 *
 * @example
 * ```ts
 * const run = await resume(client, 'run-1', { largeValueBytes: DEFAULT_LARGE_VALUE_BYTES / 4 });
 * ```
 */
export const DEFAULT_LARGE_VALUE_BYTES = INLINE_BUDGET_BYTES;

const obsKey = (o: Pick<Observation, 'turn' | 'name' | 'index'>) =>
  `${o.turn}\u0000${o.name}\u0000${o.index}`;

/**
 * A resumed agent run. Get one from {@link resume}.
 *
 * @example
 * ```ts
 * const run = await resume(client, 'run-1');
 * while (run.turn <= 50) {
 *   const answer = await run.observe('model', () => model.call(run.state));
 *   await run.checkpoint([{ op: 'set', path: '/last', value: answer }]);
 * }
 * ```
 */
export class DurableRun {
  readonly streamId: string;
  #state: JsonObject;
  #digest: string;
  /** The stream's state digest version (the head's `digestVersion`; new streams: 2). */
  readonly #version: DigestVersion;
  #turn: number;
  /** Recorded turns still to replay: turn -> its recorded state digest. */
  readonly #recordedDigests: Map<number, string>;
  readonly #observations: Map<string, Json>;
  readonly #counters = new Map<string, number>();
  readonly #client: HefestoClient;
  readonly #largeValueBytes: number;
  /** The life of the stream this run writes in (none yet: a new stream, until its first write). */
  #incarnation: string | undefined;
  /** The schema version this run writes (recorded on each delta when above 1). */
  readonly #schema: number;
  #lease:
    | { owner: string; epoch: number; ttlMs: number; timer?: ReturnType<typeof setInterval> }
    | undefined;
  #leaseLost: unknown;

  /** @internal use {@link resume} */
  constructor(
    client: HefestoClient,
    streamId: string,
    start: {
      state: JsonObject;
      digest: string;
      turn: number;
      version?: DigestVersion;
      incarnation?: string;
      schema?: number;
    },
    recorded: { digests: Map<number, string>; observations: Observation[] },
    largeValueBytes = DEFAULT_LARGE_VALUE_BYTES,
  ) {
    this.#schema = start.schema ?? 1;
    this.#client = client;
    this.#largeValueBytes = largeValueBytes;
    this.streamId = streamId;
    this.#state = start.state;
    this.#digest = start.digest;
    this.#version = start.version ?? NEW_STREAM_DIGEST_VERSION;
    this.#turn = start.turn;
    this.#incarnation = start.incarnation;
    this.#recordedDigests = recorded.digests;
    this.#observations = new Map(recorded.observations.map((o) => [obsKey(o), o.value]));
  }

  /** The agent state after the last checkpoint (do not mutate it; checkpoint instead). */
  get state(): Readonly<JsonObject> {
    return this.#state;
  }

  get stateDigest(): string {
    return this.#digest;
  }

  /** The schema version of {@link state}: the one this run was resumed with. */
  get schemaVersion(): number {
    return this.#schema;
  }

  /** The current turn, from 1. */
  get turn(): number {
    return this.#turn;
  }

  /** The lease epoch this run writes under (undefined without a lease). */
  get epoch(): number | undefined {
    return this.#lease?.epoch;
  }

  /** @internal: keeps renewing a lease resume acquired. */
  holdLease(owner: string, lease: { epoch: number }, ttlMs: number): void {
    const timer = setInterval(
      () => {
        this.#client
          .renewLease(this.streamId, { owner, epoch: lease.epoch, ttlMs })
          .catch((err: unknown) => {
            this.#leaseLost = err;
            clearInterval(timer);
          });
      },
      Math.max(250, Math.floor(ttlMs / 3)),
    );
    timer.unref?.();
    this.#lease = { owner, epoch: lease.epoch, ttlMs, timer };
  }

  /**
   * Stops renewing the lease; with `release`, gives it up (its epoch is fenced from then on).
   *
   * @example
   * ```ts
   * await run.stop({ release: true });
   * ```
   */
  async stop(options: { release?: boolean } = {}): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    clearInterval(lease.timer);
    this.#lease = undefined;
    if (options.release)
      await this.#client.releaseLease(this.streamId, { owner: lease.owner, epoch: lease.epoch });
    this.#client.setFence(this.streamId, undefined);
  }

  #checkLease(): void {
    if (this.#leaseLost !== undefined) throw this.#leaseLost;
  }

  /**
   * Runs an irreversible side effect exactly once across workers, crashes and replays:
   * `fn` gets the effect key (pass it to the external system as its idempotency key). A
   * completed effect returns its stored result without running again. When a previous
   * holder died without finishing (unknown outcome), `reconcile` asks the external system
   * whether it happened, so it is not run twice.
   *
   * @example
   * ```ts
   * const receipt = await run.effect('pay-order-17', (key) => payments.charge(500, { idempotencyKey: key }), {
   *   kind: 'payment',
   *   intent: { cents: 500 },
   *   reconcile: async (key) => {
   *     const found = await payments.find(key);
   *     return found ? { done: true, result: found } : { done: false };
   *   },
   * });
   * ```
   */
  async effect<T extends Json>(
    effectKey: string,
    fn: (effectKey: string) => T | Promise<T>,
    options: {
      kind: string;
      intent?: Json;
      compensation?: Json;
      sagaId?: string;
      leaseMs?: number;
      reconcile?: (effectKey: string) => Promise<{ done: true; result: T } | { done: false }>;
    },
  ): Promise<T> {
    this.#checkLease();
    return runEffect(this.#client, this.streamId, effectKey, fn, options);
  }

  /** Whether the current turn is being replayed from the ledger. */
  get replaying(): boolean {
    return this.#recordedDigests.has(this.#turn);
  }

  /**
   * Returns the recorded result of this observation when the ledger has one for this turn
   * and name; otherwise calls `call` once, records its result, and returns it.
   *
   * @example
   * ```ts
   * const reply = await run.observe('model', () => llm.complete(prompt));
   * const hits = await run.observe('search', () => search(reply.query));
   * ```
   */
  async observe<T extends JsonValueOf<T>>(name: string, call: () => T | Promise<T>): Promise<T> {
    this.#checkLease();
    const counter = `${this.#turn}\u0000${name}`;
    const index = this.#counters.get(counter) ?? 0;
    this.#counters.set(counter, index + 1);
    const key = obsKey({ turn: this.#turn, name, index });
    if (this.#observations.has(key)) return this.#observations.get(key) as T;
    if (this.replaying) {
      throw new DivergenceDetectedError(
        this.#turn,
        `observation ${name}#${index}`,
        'a call that was never recorded',
      );
    }
    const value = await call();
    const observation: Observation = {
      turn: this.#turn,
      name,
      index,
      value: value as unknown as Json,
      ...(this.#schema > 1 ? { schema: this.#schema } : {}),
    };
    // A worker of another schema version records its own observations (its prompt saw
    // another shape): its own key, and a run of this version never replays them.
    const version = this.#schema > 1 ? `/v${this.#schema}` : '';
    const written = await this.#client.append(
      this.streamId,
      [{ type: OBSERVATION_TYPE, payload: observation as unknown as Json }],
      {
        idempotencyKey: `${this.streamId}/obs/${this.#turn}/${name}/${index}${version}`,
        incarnation: this.#incarnation,
      },
    );
    this.#incarnation ??= written.incarnation;
    this.#observations.set(key, value);
    return value;
  }

  /**
   * Ends the turn with a delta checkpoint (SET/DELETE ops on the state). While replaying,
   * the ops are checked against the recorded digest instead of written.
   *
   * @example
   * ```ts
   * await run.checkpoint([
   *   { op: 'set', path: '/messages/-', value: reply },
   *   { op: 'set', path: '/turn', value: run.turn },
   * ]);
   * ```
   */
  async checkpoint(ops: DeltaOp[]): Promise<{ turn: number; stateDigest: string }> {
    this.#checkLease();
    // The state the agent sees is kept in canonical key order, the order a resumed worker
    // gets from the server: an agent that serializes its state (into a prompt, say) then
    // sees the same bytes before and after a crash.
    const json = canonicalJson(applyOps(structuredClone(this.#state), ops as never));
    const next = JSON.parse(json) as JsonObject;
    // The digest of the stream's version, from the same domain code the server runs.
    const digest = this.#version === 2 ? digestOfState(next, 2) : sha256Hex(json);
    const turn = this.#turn;
    const recorded = this.#recordedDigests.get(turn);
    if (recorded !== undefined) {
      if (recorded !== digest) throw new DivergenceDetectedError(turn, recorded, digest);
      this.#recordedDigests.delete(turn);
    } else {
      try {
        const schema = this.#schema > 1 ? { schema: this.#schema } : {};
        const written = await this.#client.checkpoint(
          this.streamId,
          { ops: await this.#byRef(ops), baseDigest: this.#digest, stateDigest: digest, ...schema },
          { idempotencyKey: `${this.streamId}/turn/${turn}`, incarnation: this.#incarnation },
        );
        this.#incarnation ??= written.incarnation;
      } catch (err) {
        await this.#refuseIfMigrated(err);
        // Another worker checkpointed this turn already, with another state (the per-turn
        // key was used for another body) or from another base: this run has diverged.
        if (
          err instanceof HefestoApiError &&
          (err.code === 'ErrDivergenceDetected' || err.code === 'ErrIdempotencyKeyReused')
        ) {
          throw new DivergenceDetectedError(
            turn,
            String(err.problem?.detail ?? 'server state'),
            digest,
          );
        }
        throw err;
      }
    }
    this.#state = next;
    this.#digest = digest;
    this.#turn = turn + 1;
    return { turn, stateDigest: digest };
  }

  /**
   * A write refused because the state moved: when another worker migrated the stream to a
   * newer schema meanwhile, that is the reason to report (this run holds the old shape).
   */
  async #refuseIfMigrated(err: unknown): Promise<void> {
    const moved =
      err instanceof HefestoApiError &&
      (err.code === 'ErrDivergenceDetected' || err.code === 'ErrIdempotencyKeyReused');
    if (!moved) return;
    const now = await streamSchema(this.#client, this.streamId).catch(() => undefined);
    if (now !== undefined && now > this.#schema) {
      throw new SchemaTooNewError(now, this.#schema, { cause: err });
    }
  }

  /**
   * @internal (resume): commits the migration of this run's state from schema version `from`
   * to `schema.version` as one `hefesto.migration`. Its key is the same for every worker that
   * read the same head, so two resumers with the same upcasters commit it once (the second is
   * answered the first's result); the refusal when another write won (the caller loads again).
   */
  async migrate(
    from: number,
    schema: ReturnType<typeof schemaOf>,
    stateSeq: number,
  ): Promise<HefestoApiError | undefined> {
    const { state, ops } = upcast(this.#state, from, schema);
    const digest = this.#version === 2 ? digestOfState(state, 2) : sha256Hex(canonicalJson(state));
    try {
      const written = await this.#client.checkpoint(
        this.streamId,
        {
          ops: await this.#byRef(ops),
          baseDigest: this.#digest,
          stateDigest: digest,
          migration: { from, to: schema.version },
        },
        {
          idempotencyKey: `${this.streamId}/schema/${stateSeq}/${schema.version}`,
          incarnation: this.#incarnation,
        },
      );
      this.#incarnation ??= written.incarnation;
    } catch (err) {
      const lost =
        err instanceof HefestoApiError &&
        ['ErrDivergenceDetected', 'ErrIdempotencyKeyReused', 'ErrSchemaTooNew'].includes(err.code);
      if (lost) return err;
      throw err;
    }
    this.#state = state;
    this.#digest = digest;
    return undefined;
  }

  /**
   * The ops as sent: large values uploaded first and named by ref. Deterministic (a ref is
   * the value's hash), so a retried turn sends the same body under the same key; a crash
   * after an upload leaves chunks the next worker re-uploads as a no-op.
   */
  async #byRef(ops: DeltaOp[]): Promise<Array<DeltaOp | SetRefOp>> {
    const sizes = ops.map((op) => (op.op === 'set' ? canonicalBytes(op.value) : 0));
    const byRef = pickByRef(sizes, this.#largeValueBytes, INLINE_BUDGET_BYTES);
    const out: Array<DeltaOp | SetRefOp> = [];
    for (const [i, op] of ops.entries()) {
      if (op.op === 'set' && byRef.has(i)) {
        out.push({ op: 'set', path: op.path, ref: await this.#client.putValue(op.value) });
      } else out.push(op);
    }
    return out;
  }
}

/** The state with its keys in canonical (RFC 8785) order, as the harness always keeps it. */
const canonicalOrder = (state: JsonObject): JsonObject =>
  JSON.parse(canonicalJson(state)) as JsonObject;

const observationsOf = (events: LedgerEvent[], schema: number, from = 1): Observation[] =>
  events
    .filter((e) => e.type === OBSERVATION_TYPE && e.seq >= from)
    .map((e) => e.payload as unknown as Observation)
    .filter((o) => typeof o?.turn === 'number' && typeof o.name === 'string')
    .filter((o) => (o.schema ?? 1) === schema);

const readAll = async (
  client: HefestoClient,
  streamId: string,
  from: number,
): Promise<LedgerEvent[]> => {
  const out: LedgerEvent[] = [];
  for await (const e of client.events(streamId, { from })) out.push(e);
  return out;
};

/**
 * The schema version of the stream's state now: the state-setting event at the head's
 * `stateSeq` says it (docs/schema-evolution.md); undefined before any.
 */
const streamSchema = async (
  client: HefestoClient,
  streamId: string,
): Promise<number | undefined> => {
  const head = await client.getStream(streamId);
  if (head.stateSeq === 0) return undefined;
  const { events } = await client.readEvents(streamId, { from: head.stateSeq, limit: 1 });
  return events[0] ? schemaVersionOf(events[0]) : undefined;
};

/**
 * The events from the one at the head's `stateSeq` (its schema version) on. Retention may have
 * pruned up to it: without a declared schema the run goes on from the events after it, as
 * before schemas; with one, the version cannot be read and the run is refused.
 */
const readTail = async (
  client: HefestoClient,
  streamId: string,
  head: { seq: number; stateSeq: number },
  declared: boolean,
): Promise<LedgerEvent[]> => {
  if (head.stateSeq === 0 && head.seq === 0) return [];
  try {
    return await readAll(client, streamId, Math.max(1, head.stateSeq));
  } catch (err) {
    if (!(err instanceof HefestoApiError && err.code === 'ErrPruned') || declared) throw err;
    return head.seq > head.stateSeq ? readAll(client, streamId, head.stateSeq + 1) : [];
  }
};

/** Resumes attempted before giving up on migrating a stream other writers keep moving. */
const MAX_MIGRATION_ATTEMPTS = 8;

/**
 * Resumes (or starts) the durable run of `streamId`: hydrates the state and loads the
 * observations already recorded for the current turn, so the agent continues at turn N+1.
 * With `schema`, a state of an older version is upcast and migrated first.
 *
 * @example
 * ```ts
 * const run = await resume(client, 'support-ticket-4711');
 * console.log(`continuing at turn ${run.turn}`);
 * ```
 */
export const resume = async (
  client: HefestoClient,
  streamId: string,
  options: ResumeOptions = {},
): Promise<DurableRun> => {
  const schema = schemaOf(options.schema);
  // Lease first, then hydrate: once we hold epoch N, no write of an older epoch can land,
  // so the state we load is the state we continue from.
  const ttlMs = options.lease?.ttlMs ?? 30_000;
  const lease = options.lease
    ? await client.acquireLease(streamId, { ...options.lease, ttlMs })
    : undefined;
  if (lease) client.setFence(streamId, lease.epoch);
  for (let attempt = 1; ; attempt++) {
    const { run, from, stateSeq } = await load(client, streamId, options, schema);
    // A migration another resumer won (or a turn written meanwhile): load again, and see it.
    const lost = from === undefined ? undefined : await run.migrate(from, schema, stateSeq);
    if (lost !== undefined) {
      if (attempt < MAX_MIGRATION_ATTEMPTS) continue;
      throw lost;
    }
    if (lease && options.lease) run.holdLease(options.lease.owner, lease, ttlMs);
    return run;
  }
};

const load = async (
  client: HefestoClient,
  streamId: string,
  options: ResumeOptions,
  schema: ReturnType<typeof schemaOf>,
): Promise<{ run: DurableRun; from?: number; stateSeq: number }> => {
  let head: Awaited<ReturnType<HefestoClient['getStream']>>;
  try {
    head = await client.getStream(streamId);
  } catch (err) {
    if (err instanceof HefestoApiError && err.code === 'ErrStreamNotFound') {
      // A stream created now is v2 (records-v2): its first checkpoint starts from v2's {}.
      const version = NEW_STREAM_DIGEST_VERSION;
      const run = new DurableRun(
        client,
        streamId,
        { state: {}, digest: emptyStateDigest(version), turn: 1, version, schema: schema.version },
        { digests: new Map(), observations: [] },
        options.largeValueBytes,
      );
      return { run, stateSeq: 0 };
    }
    throw err;
  }
  const version = digestVersionOf(head);
  if (options.replay) {
    const events = await readAll(client, streamId, 1);
    const last = events.find((e) => e.seq === head.stateSeq);
    const now = last ? schemaVersionOf(last) : schema.version;
    if (now > schema.version) throw new SchemaTooNewError(now, schema.version);
    // Replay starts where the state took this worker's version (schema-migration.ts).
    const start = replayStart(events, schema.version);
    const digests = new Map<number, string>();
    let turn = 0;
    for (const e of events) {
      if (e.type === 'hefesto.delta') {
        turn++;
        if (turn >= start.turn)
          digests.set(turn, (e.payload as { stateDigest: string }).stateDigest);
      }
    }
    const origin =
      start.migrationSeq !== undefined
        ? await client.getState(streamId, { at: start.migrationSeq })
        : events[0]?.type === FORK_EVENT
          ? await client.getState(streamId, { at: 1 })
          : undefined;
    const state = canonicalOrder((origin?.state ?? {}) as JsonObject);
    const run = new DurableRun(
      client,
      streamId,
      {
        state,
        digest: origin?.stateDigest ?? emptyStateDigest(version),
        turn: start.turn,
        version,
        incarnation: head.incarnation,
        schema: schema.version,
      },
      { digests, observations: observationsOf(events, schema.version) },
      options.largeValueBytes,
    );
    return { run, stateSeq: head.stateSeq };
  }
  const at = await client.getState(streamId, { at: head.seq });
  // From the event that set the state (its schema version), through the observations after it.
  const tail = await readTail(client, streamId, head, options.schema !== undefined);
  const stateEvent = tail.find((e) => e.seq === head.stateSeq);
  const now = stateEvent ? schemaVersionOf(stateEvent) : schema.version;
  if (now > schema.version) throw new SchemaTooNewError(now, schema.version);
  const turn = head.deltas + 1;
  const pending = tail.filter((e) => e.seq > head.stateSeq);
  const run = new DurableRun(
    client,
    streamId,
    {
      state: canonicalOrder(at.state as JsonObject),
      digest: at.stateDigest,
      turn,
      version,
      incarnation: head.incarnation,
      schema: schema.version,
    },
    {
      digests: new Map(),
      observations: observationsOf(pending, schema.version).filter((o) => o.turn === turn),
    },
    options.largeValueBytes,
  );
  return { run, stateSeq: head.stateSeq, ...(now < schema.version ? { from: now } : {}) };
};
