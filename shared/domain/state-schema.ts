import jsonpatch from 'fast-json-patch';
import { canonicalJson } from './canonical.js';
import { applyOps, type DeltaOp, type JsonObject, MIGRATION_EVENT } from './state.js';

/**
 * Schema versions of the agent's state (docs/schema-evolution.md). The version of the state
 * at a seq is read from the state-setting event at or before it, so it is bound by the chain:
 * a migration's `to`, else the `schema` a delta (or a fork) recorded, else 1 (a stream written
 * by a worker that declared no schema).
 */

/** The version of a state no worker declared one for. */
export const UNVERSIONED = 1;

/** Largest schema version accepted (a u31, so it survives every JSON number reader). */
export const MAX_SCHEMA_VERSION = 2 ** 31 - 1;

export const isSchemaVersion = (v: unknown): v is number =>
  Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= MAX_SCHEMA_VERSION;

/** The schema version of the state a state-setting event (delta, migration, fork) yields. */
export const schemaVersionOf = (event: { type: string; payload: unknown }): number => {
  const p = event.payload as { schema?: unknown; to?: unknown } | null;
  const v = event.type === MIGRATION_EVENT ? p?.to : p?.schema;
  return isSchemaVersion(v) ? v : UNVERSIONED;
};

const toDeltaOps = (patch: jsonpatch.Operation[]): DeltaOp[] | undefined => {
  const ops: DeltaOp[] = [];
  for (const p of patch) {
    if (p.op === 'remove') ops.push({ op: 'delete', path: p.path });
    else if (p.op === 'add' || p.op === 'replace')
      ops.push({ op: 'set', path: p.path, value: p.value });
    else return undefined;
  }
  return ops;
};

/** Ops one checkpoint may carry (the checkpoint route's MAX_OPS). */
export const MAX_CHECKPOINT_OPS = 1000;

/**
 * Set / delete ops that turn `before` into `after` (neither is changed): a JSON Patch diff
 * (fast-json-patch `compare`) when applying it yields `after` exactly and it is no larger than
 * one op per top-level key that differs; else those. Empty when equal. A field renamed in
 * every entry of a long list is then one set of the list, not two ops per entry.
 */
export const opsBetween = (before: JsonObject, after: JsonObject): DeltaOp[] => {
  const whole = wholeKeys(before, after);
  const diff = toDeltaOps(jsonpatch.compare(before, after));
  if (!diff || diff.length > MAX_CHECKPOINT_OPS) return whole;
  if (canonicalJson(diff).length > canonicalJson(whole).length) return whole;
  try {
    if (canonicalJson(applyOps(structuredClone(before), diff)) === canonicalJson(after)) {
      return diff;
    }
  } catch {
    // an array diff the set / delete ops cannot express: whole keys
  }
  return whole;
};

const wholeKeys = (before: JsonObject, after: JsonObject): DeltaOp[] => {
  const ops: DeltaOp[] = [];
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key)) ops.push({ op: 'delete', path: `/${pointerOf(key)}` });
  }
  for (const [key, value] of Object.entries(after)) {
    const old = before[key];
    if (old === undefined || canonicalJson(old) !== canonicalJson(value)) {
      ops.push({ op: 'set', path: `/${pointerOf(key)}`, value });
    }
  }
  return ops;
};

const pointerOf = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1');
