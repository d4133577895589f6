import { FORK_EVENT, type JsonObject } from '../domain/state.js';
import {
  digestVersionOf,
  emptyStateDigest,
  NEW_STREAM_DIGEST_VERSION,
} from '../domain/state-digest.js';
import { schemaVersionOf } from '../domain/state-schema.js';
import type { HefestoClient } from './client.js';
import { DurableRun } from './durable-run.js';
import { HefestoApiError, SchemaTooNewError } from './errors.js';
import { canonicalOrder, observationsOf, readAll, readTail } from './run-events.js';
import { replayStart, type StateSchema, schemaOf } from './schema-migration.js';

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

export { DEFAULT_LARGE_VALUE_BYTES, DurableRun } from './durable-run.js';
export { OBSERVATION_TYPE } from './run-events.js';

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
   * by ref too until the values sent inline add up to INLINE_BUDGET_BYTES, so a turn
   * always fits the server's limit on a checkpoint's ops (256 KiB). The digest is computed
   * from the value either way. Default INLINE_BUDGET_BYTES (192 KiB).
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
