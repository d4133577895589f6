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

/**
 * Set / delete ops that turn `before` into `after` (neither is changed): a JSON Patch diff
 * (fast-json-patch `compare`) when applying it yields `after` exactly, else (an array diff the
 * set / delete ops cannot express) one op per top-level key that differs. Empty when equal.
 */
export const opsBetween = (before: JsonObject, after: JsonObject): DeltaOp[] => {
  const target = canonicalJson(after);
  const diff = toDeltaOps(jsonpatch.compare(before, after));
  if (diff) {
    try {
      if (canonicalJson(applyOps(structuredClone(before), diff)) === target) return diff;
    } catch {
      // falls back to whole keys
    }
  }
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
