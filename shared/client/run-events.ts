import { canonicalJson } from '../domain/canonical.js';
import type { JsonObject } from '../domain/state.js';
import { schemaVersionOf } from '../domain/state-schema.js';
import type { HefestoClient } from './client.js';
import { HefestoApiError } from './errors.js';
import type { Json, LedgerEvent } from './types.js';

/**
 * What the durable harness reads from the chain (harness.ts): recorded observations, the
 * events from the one that set the state, and the schema version of the state at the head.
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

/**
 * A recorded observation's payload: its turn, its name and index in the turn, its value.
 *
 * @example
 * ```ts
 * const obs: Observation[] = observationsOf(events, 1);
 * ```
 */
export interface Observation {
  turn: number;
  name: string;
  index: number;
  value: Json;
  /** The schema version of the worker that recorded it, when above 1. */
  schema?: number;
}

/**
 * An observation's place in its turn: turn, name and index, one string.
 *
 * @example
 * ```ts
 * const recorded = new Map(observationsOf(events, 1).map((o) => [obsKey(o), o]));
 * ```
 */
export const obsKey = (o: Pick<Observation, 'turn' | 'name' | 'index'>) =>
  `${o.turn}\u0000${o.name}\u0000${o.index}`;

/**
 * The state with its keys in canonical (RFC 8785) order, as the harness always keeps it.
 *
 * @example
 * ```ts
 * canonicalOrder({ b: 1, a: 2 }); // { a: 2, b: 1 }
 * ```
 */
export const canonicalOrder = (state: JsonObject): JsonObject =>
  JSON.parse(canonicalJson(state)) as JsonObject;

/**
 * The observations among `events` from seq `from` on, recorded at schema version `schema`.
 *
 * @example
 * ```ts
 * const replay = observationsOf(await readAll(client, 'run-1', 1), 1);
 * ```
 */
export const observationsOf = (events: LedgerEvent[], schema: number, from = 1): Observation[] =>
  events
    .filter((e) => e.type === OBSERVATION_TYPE && e.seq >= from)
    .map((e) => e.payload as unknown as Observation)
    .filter((o) => typeof o?.turn === 'number' && typeof o.name === 'string')
    .filter((o) => (o.schema ?? 1) === schema);

/**
 * Every event of the stream from seq `from` on, page after page.
 *
 * @example
 * ```ts
 * const events = await readAll(client, 'run-1', 1);
 * ```
 */
export const readAll = async (
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
 *
 * @example
 * ```ts
 * const version = await streamSchema(client, 'run-1'); // 3
 * ```
 */
export const streamSchema = async (
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
 *
 * @example
 * ```ts
 * const tail = await readTail(client, 'run-1', await client.getStream('run-1'), true);
 * ```
 */
export const readTail = async (
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
