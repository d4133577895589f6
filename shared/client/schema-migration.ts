import { canonicalJson } from '../domain/canonical.js';
import { DELTA_EVENT, type DeltaOp, type JsonObject, MIGRATION_EVENT } from '../domain/state.js';
import { isSchemaVersion, opsBetween, schemaVersionOf } from '../domain/state-schema.js';
import { InvalidOptionsError, SchemaReplayError, UpcasterMissingError } from './errors.js';
import type { LedgerEvent } from './types.js';

/**
 * Schema evolution of the agent's state in the harness (docs/schema-evolution.md): the
 * version the worker declares, the upcasters that bring an older state up to it, and what the
 * chain says about the version of the state at the head and of each recorded turn.
 */

/**
 * Turns a state of schema version `n` into one of version `n + 1` (key it by `n`). It gets a
 * copy it may change; it must be deterministic (two workers migrating at once then write the
 * same migration; see docs/schema-evolution.md).
 *
 * @example
 * ```ts
 * const renameTodo: Upcaster = ({ todo, ...rest }) => ({ ...rest, tasks: todo ?? [] });
 * ```
 */
export type Upcaster = (state: JsonObject) => JsonObject;

/**
 * The shape of the state a worker reads and writes: its version (an integer from 1; streams
 * that never declared one are at 1) and the upcasters from each older version it can read.
 *
 * @example
 * ```ts
 * const schema: StateSchema = {
 *   version: 3,
 *   upcasters: { 1: ({ todo, ...s }) => ({ ...s, tasks: todo }), 2: (s) => ({ ...s, done: [] }) },
 * };
 * ```
 */
export interface StateSchema {
  version: number;
  upcasters?: Readonly<Record<number, Upcaster>>;
}

/**
 * The schema a run works at: the declared one (checked), or version 1 with no upcasters.
 *
 * @example
 * ```ts
 * const { version, upcasters } = schemaOf({ version: 2, upcasters: { 1: (s) => s } });
 * ```
 */
export const schemaOf = (schema: StateSchema | undefined): Required<StateSchema> => {
  if (schema === undefined) return { version: 1, upcasters: {} };
  if (!isSchemaVersion(schema.version)) {
    throw new InvalidOptionsError(
      `schema.version must be an integer from 1, not ${schema.version}`,
    );
  }
  for (const [key, up] of Object.entries(schema.upcasters ?? {})) {
    const from = Number(key);
    if (!isSchemaVersion(from) || from >= schema.version || typeof up !== 'function') {
      throw new InvalidOptionsError(
        `schema.upcasters[${key}] must be a function from a version below ${schema.version}`,
      );
    }
  }
  return { version: schema.version, upcasters: schema.upcasters ?? {} };
};

/**
 * The state at `from` brought up to `to`, one upcaster at a time, in canonical key order (the
 * order the harness keeps states in), and the ops that turn the one into the other.
 *
 * @example
 * ```ts
 * const { state, ops } = upcast({ todo: [] }, 1, schemaOf({ version: 2, upcasters }));
 * ```
 */
export const upcast = (
  state: JsonObject,
  from: number,
  schema: Required<StateSchema>,
): { state: JsonObject; ops: DeltaOp[] } => {
  let next = state;
  for (let v = from; v < schema.version; v++) {
    const up = schema.upcasters[v];
    if (!up) throw new UpcasterMissingError(v, from, schema.version);
    next = up(structuredClone(next));
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new InvalidOptionsError(`schema.upcasters[${v}] must return a JSON object`);
    }
  }
  const migrated = JSON.parse(canonicalJson(next)) as JsonObject;
  return { state: migrated, ops: opsBetween(state, migrated) };
};

/**
 * Where a replay by a worker of `version` starts (docs/schema-evolution.md, "Replay"): at the
 * last migration to its version, whose state the turns after it were run on; from the start
 * when the stream was written at that version from its first turn. A turn in that range
 * recorded at another version refuses the replay (SchemaReplayError naming it): the code that
 * ran it was another version's.
 *
 * @example
 * ```ts
 * const { migrationSeq, turn } = replayStart(events, 3);
 * ```
 */
export const replayStart = (
  events: LedgerEvent[],
  version: number,
): { migrationSeq: number | undefined; turn: number } => {
  let migrationSeq: number | undefined;
  let before = 0;
  let deltas = 0;
  for (const e of events) {
    if (e.type === MIGRATION_EVENT && schemaVersionOf(e) === version) {
      migrationSeq = e.seq;
      before = deltas;
    } else if (e.type === DELTA_EVENT) deltas++;
  }
  let turn = before;
  for (const e of events) {
    if (e.type !== DELTA_EVENT || (migrationSeq !== undefined && e.seq < migrationSeq)) continue;
    turn++;
    const recorded = schemaVersionOf(e);
    if (recorded !== version) throw new SchemaReplayError(turn, recorded, version);
  }
  return { migrationSeq, turn: before + 1 };
};
