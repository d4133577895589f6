import { canonicalJson } from '../domain/canonical.js';
import { sha256Hex } from '../domain/hashing.js';
import { applyOps, type JsonObject } from '../domain/state.js';
import {
  type DigestVersion,
  digestOfState,
  NEW_STREAM_DIGEST_VERSION,
} from '../domain/state-digest.js';
import type { HefestoClient } from './client.js';
import { runEffect } from './effect-run.js';
import { DivergenceDetectedError, HefestoApiError, SchemaTooNewError } from './errors.js';
import { canonicalBytes, INLINE_BUDGET_BYTES, pickByRef, type SetRefOp } from './large-values.js';
import { OBSERVATION_TYPE, type Observation, obsKey, streamSchema } from './run-events.js';
import { RunLease } from './run-lease.js';
import { type schemaOf, upcast } from './schema-migration.js';
import type { DeltaOp, Json, JsonValueOf } from './types.js';

/**
 * A durable run's turns (harness.ts says how a turn is recorded and resumed): its state,
 * observations recorded before the agent sees them, checkpoints, effects, the lease it holds,
 * and the migration resume commits for it.
 */

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
  /** The lease this run renews (none without one, or once stopped). */
  #lease: RunLease | undefined;
  /** The last lease it held: a lease lost stays lost after stop. */
  #held: RunLease | undefined;

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
    this.#lease = new RunLease(this.#client, this.streamId, { owner, epoch: lease.epoch, ttlMs });
    this.#held = this.#lease;
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
    this.#lease = undefined;
    await lease.stop(options.release === true);
  }

  #checkLease(): void {
    this.#held?.check();
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
