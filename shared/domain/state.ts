import jsonpatch from 'fast-json-patch';
import { canonicalJson, type JsonValue } from './canonical.js';
import { InvalidDeltaError, InvalidInputError } from './errors.js';
import { sha256Hex } from './hashing.js';

/**
 * Agent state and delta checkpoints. The state is a JSON object ({} when empty); a delta is a
 * list of SET / DELETE operations addressed by RFC 6901 JSON Pointers, applied with
 * fast-json-patch. The state digest is SHA-256 of the RFC 8785 canonical JSON of the state.
 */

export type JsonObject = { [key: string]: JsonValue };

export type DeltaOp =
  | { op: 'set'; path: string; value: JsonValue }
  | { op: 'delete'; path: string };

/** Ledger event types the service writes itself; clients may not append them directly. */
export const DELTA_EVENT = 'hefesto.delta';
export const FORK_EVENT = 'hefesto.fork';
/**
 * A delta that also changes the state's schema version (docs/schema-evolution.md): its payload
 * is a delta's plus `from` and `to`. It sets the state like a delta; it is no turn (the head's
 * `deltas` and the base cadence count deltas only).
 */
export const MIGRATION_EVENT = 'hefesto.migration';
/** Whether events of `type` carry ops that change the state: a delta or a migration. */
export const appliesOps = (type: string): boolean =>
  type === DELTA_EVENT || type === MIGRATION_EVENT;
export const RESERVED_TYPE_PREFIX = 'hefesto.';

/** A delta event's payload: v1 `{ops, baseDigest, stateDigest}`, plus the v2 fields. */
export interface DeltaPayload {
  /** 2 for a payload with v2 fields (docs/records-v2.md); absent: v1. */
  v?: 2;
  ops: DeltaOp[];
  /** The seq whose state the ops apply to; absent: the state before this event. */
  baseSeq?: number;
  baseDigest: string;
  stateDigest: string;
  /** Depth of the result along baseSeq links (records-v2). */
  depth?: number;
  /** The checkpoint's label (a LangGraph checkpoint id), unique in the stream. */
  label?: string;
  /** Small JSON the writer attached (the saver's metadata). */
  meta?: JsonValue;
  /** The label of the checkpoint this one continues. */
  parentLabel?: string;
  /** A labelled delta's pending writes are bound once it is left (frozen-writes.ts). */
  writesBound?: true;
  /** The label of the checkpoint this delta moved the head's state off (its writes freeze). */
  leaves?: string;
  /** The digest of the writes of the checkpoint the previous state left (frozen then). */
  pendingWrites?: { label: string; digest: string };
  /** The schema version of the state it yields, when a worker declared one (absent: 1). */
  schema?: number;
  /**
   * A session history's clear (shared/history): the chain is cut at this delta, so nothing
   * before it is served any more and the compactor removes it (docs/openai-agents.md).
   */
  clear?: true;
  /**
   * A hint for the compactor (expiry-hint.ts): entries of the object at `path` whose `field`
   * is a time (ms) at or before the server's now may be deleted, the earliest at `at`.
   */
  expiry?: ExpiryHint;
}

/** A delta's expiry hint: what the compactor looks for, and from when (expiry-hint.ts). */
export interface ExpiryHint {
  /** The earliest expiry (ms) of any entry, as the writer computed it: never trusted. */
  at: number;
  /** The object whose entries expire (an RFC 6901 pointer; `""`: the state). */
  path: string;
  /** The member of each entry that holds its expiry (ms). */
  field: string;
}

/** A migration's payload: a delta's, and the schema versions it turns the state from and to. */
export interface MigrationPayload extends DeltaPayload {
  from: number;
  to: number;
}

export interface ForkPayload {
  source: { streamId: string; seq: number; hash: string };
  stateDigest: string;
  /** v1 origin: a snapshot object under the new stream. */
  snapshotKey?: string;
  /** Snapshots v2: the root of the origin state's chunks (docs/state-v2.md). */
  root?: { format: 'hefesto.state'; v: 2; digest: string; size: number };
  /** 2 on every fork written since state v2 (a fork is a v2 stream); absent: v1. */
  digestVersion?: 2;
  /** The schema version of the source's state at the fork (docs/schema-evolution.md); absent: 1. */
  schema?: number;
}

export const EMPTY_STATE_DIGEST = sha256Hex(canonicalJson({}));

export const stateDigestOf = (state: JsonObject): string => sha256Hex(canonicalJson(state));

const isContainer = (v: unknown): v is JsonObject | JsonValue[] =>
  typeof v === 'object' && v !== null;

const parentOf = (path: string): { parent: string; last: string } => {
  const at = path.lastIndexOf('/');
  return { parent: path.slice(0, at), last: jsonpatch.unescapePathComponent(path.slice(at + 1)) };
};

/**
 * Applies ops to `state` IN PLACE (the caller owns the object and discards it if this throws,
 * since earlier ops may already have applied). Throws InvalidDeltaError naming the op.
 */
export const applyOps = (state: JsonObject, ops: DeltaOp[]): JsonObject => {
  for (const [i, op] of ops.entries()) {
    if (!op.path.startsWith('/')) {
      throw new InvalidDeltaError(i, 'path must be a JSON Pointer below the root, like /a/b');
    }
    const { parent, last } = parentOf(op.path);
    let container: unknown;
    try {
      container = parent === '' ? state : jsonpatch.getValueByPointer(state, parent);
    } catch {
      container = undefined;
    }
    if (container === undefined)
      throw new InvalidDeltaError(i, `parent of ${op.path} does not exist`);
    if (!isContainer(container))
      throw new InvalidDeltaError(i, `parent of ${op.path} is not an object or array`);
    const array = Array.isArray(container) ? container : undefined;
    const isArray = array !== undefined;
    const exists = array
      ? /^(0|[1-9]\d*)$/.test(last) && Number(last) < array.length
      : Object.hasOwn(container, last);
    let patch: jsonpatch.Operation;
    if (op.op === 'delete') {
      if (!exists) throw new InvalidDeltaError(i, `${op.path} does not exist`);
      patch = { op: 'remove', path: op.path };
    } else if (array && !exists && last !== '-' && last !== String(array.length)) {
      throw new InvalidDeltaError(i, `${op.path} is past the end of the array`);
    } else {
      // A copy: later ops of the same delta may change what this one inserted, and the
      // caller's ops must stay as they were (they are what gets recorded).
      patch = {
        op: isArray && exists ? 'replace' : 'add',
        path: op.path,
        value: structuredClone(op.value),
      };
    }
    try {
      jsonpatch.applyOperation(state, patch, true, true, true);
    } catch (err) {
      throw new InvalidDeltaError(i, (err as Error).message.split('\n')[0] ?? 'cannot apply');
    }
  }
  return state;
};

/** Checks the shape of a delta's ops (types, paths); values are any JSON. */
export const checkOps = (ops: unknown): DeltaOp[] => {
  if (!Array.isArray(ops) || ops.length === 0)
    throw new InvalidInputError('ops must be a non-empty array');
  for (const [i, op] of ops.entries()) {
    const o = op as Partial<{ op: string; path: unknown; value: unknown }>;
    if (typeof o?.path !== 'string') throw new InvalidInputError(`op ${i}: path must be a string`);
    if (o.op === 'set' ? !('value' in o) || o.value === undefined : o.op !== 'delete') {
      throw new InvalidInputError(`op ${i}: must be {op:"set",path,value} or {op:"delete",path}`);
    }
  }
  return ops as DeltaOp[];
};

export const cloneState = (state: JsonObject): JsonObject => structuredClone(state);
