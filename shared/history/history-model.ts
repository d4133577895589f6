import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import { DivergenceError } from '../domain/errors.js';
import { sha256Hex } from '../domain/hashing.js';
import type { DeltaOp, JsonObject } from '../domain/state.js';
import { isSchemaVersion } from '../domain/state-schema.js';
import { hashValue } from '../domain/state-v2/index.js';

/**
 * A session's conversation history (an OpenAI Agents SDK `Session`, docs/openai-agents.md) as
 * the state of its stream:
 *
 *   { "items": [item, ...], "life": n, "schema": v }
 *
 * `items` the history in order; `life` the number of clears so far (the operation ids of a
 * history are scoped by it: a cleared history forgets them); `schema` the version of the
 * items' shape when above 1 (docs/schema-evolution.md, "Sessions": set by the writer of a
 * new history or by a `hefesto.migration`; kept by clears and replacements). Every change is one delta
 * checkpoint computed here from the state it applies to. An item of a change may be a
 * reference, `{"$hefesto.ref": {hash, size}}` (exactly that one key), to a value uploaded as
 * chunks first (PUT /v1/chunks, docs/state-v2.md "Large values"): it is set by ref, so the
 * state holds the value itself, and compared by its v2 hash.
 */

export const ITEM_REF_KEY = '$hefesto.ref';

export interface ItemRef {
  hash: string;
  size: number;
}

export type HistoryChange =
  | { type: 'append_items'; items: JsonValue[] }
  | { type: 'replace_suffix'; expectedSuffix: JsonValue[]; replacement: JsonValue[] }
  | { type: 'replace_history'; items: JsonValue[] }
  | { type: 'pop' }
  | { type: 'clear' };

export interface SessionHistory {
  items: JsonValue[];
  life: number;
  /** The schema version of the items (1 when the state records none). */
  schema: number;
}

export const EMPTY_HISTORY: SessionHistory = { items: [], life: 0, schema: 1 };

/** The schema version a history's state records (1 when none). */
export const historySchemaOf = (value: unknown): number => (isSchemaVersion(value) ? value : 1);

/** The history a stream's state holds (a state no change wrote reads as empty). */
export const historyOf = (state: JsonObject): SessionHistory => ({
  items: Array.isArray(state.items) ? state.items : [],
  life: typeof state.life === 'number' ? state.life : 0,
  schema: historySchemaOf(state.schema),
});

/** The reference an item of a change is, if it is one. */
export const itemRefOf = (item: JsonValue): ItemRef | undefined => {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const keys = Object.keys(item);
  const ref = item[ITEM_REF_KEY] as Partial<ItemRef> | undefined;
  if (keys.length !== 1 || typeof ref !== 'object' || ref === null) return undefined;
  return typeof ref.hash === 'string' && typeof ref.size === 'number'
    ? { hash: ref.hash, size: ref.size }
    : undefined;
};

/**
 * The fingerprint an operation id is kept with: the change itself as canonical JSON (RFC
 * 8785), not the request that carried it, so a retry recomputed after a crash that sends the
 * same change is recognized, and one that sends another is refused. (An item by reference is
 * fingerprinted by its hash: the same item, the same reference.)
 */
export const changeDigest = (change: HistoryChange): string =>
  sha256Hex(canonicalJson({ kind: 'hefesto.history.change', change }));

export const operationIdHash = (operationId: string): string => sha256Hex(operationId);

/** A stored item against an expected one: canonical JSON, or the v2 hash of a reference. */
const matches = (stored: JsonValue, expected: JsonValue): boolean => {
  const ref = itemRefOf(expected);
  if (ref) return hashValue(stored).toString('hex') === ref.hash;
  return canonicalJson(stored) === canonicalJson(expected);
};

const sameSuffix = (stored: JsonValue[], expected: JsonValue[]): boolean =>
  stored.length === expected.length &&
  stored.every((item, i) => matches(item, expected[i] ?? null));

export interface HistoryPlan {
  ops: DeltaOp[];
  /** The history after the change. */
  length: number;
  popped?: JsonValue;
}

const at = (i: number) => `/items/${i}`;

/** The op that sets item `i`: by value, or by reference. */
const setItem = (i: number, item: JsonValue): DeltaOp => {
  const ref = itemRefOf(item);
  return ref
    ? ({ op: 'set', path: at(i), ref } as unknown as DeltaOp)
    : { op: 'set', path: at(i), value: item };
};

/**
 * The delta that makes `change` on `history` (`exists` false for a stream that holds no
 * history yet: a new history records the writer's `schema` version when above 1), or undefined when the change changes nothing and records no operation id (a
 * pop of an empty history, a clear of a session never written). A replace_suffix whose
 * expectedSuffix is not the history's suffix is refused (ErrDivergenceDetected) before
 * anything is written.
 */
export const planChange = (
  history: SessionHistory,
  change: HistoryChange,
  state: { exists: boolean; schema?: number },
): HistoryPlan | undefined => {
  const plan = withSchema(planOf(history, change, state), state);
  // An operation id is recorded even when its transaction changes nothing (as MemorySession
  // records it): the delta then sets the life to itself.
  if (plan || (change.type !== 'append_items' && change.type !== 'replace_suffix')) return plan;
  return withSchema(
    {
      ops: state.exists ? [{ op: 'set', path: '/life', value: history.life }] : fresh(history, []),
      length: history.items.length,
    },
    state,
  );
};

/** A new history's plan also sets the version of its items, when above 1. */
const withSchema = (
  plan: HistoryPlan | undefined,
  state: { exists: boolean; schema?: number },
): HistoryPlan | undefined => {
  const schema = state.schema ?? 1;
  if (!plan || state.exists || schema === 1) return plan;
  return { ...plan, ops: [...plan.ops, { op: 'set', path: '/schema', value: schema }] };
};

/** The whole history set: an empty list, the life, then each item (by value or by ref). */
const fresh = (history: SessionHistory, next: JsonValue[], life = history.life): DeltaOp[] => [
  { op: 'set', path: '/items', value: [] },
  { op: 'set', path: '/life', value: life },
  ...next.map((item, i) => setItem(i, item)),
];

const planOf = (
  history: SessionHistory,
  change: HistoryChange,
  state: { exists: boolean },
): HistoryPlan | undefined => {
  const { items } = history;
  const n = items.length;
  switch (change.type) {
    case 'append_items': {
      if (change.items.length === 0) return undefined;
      const ops = state.exists
        ? change.items.map((item, i) => setItem(n + i, item))
        : fresh(history, change.items);
      return { ops, length: n + change.items.length };
    }
    case 'replace_suffix': {
      const k = change.expectedSuffix.length;
      if (k > n || !sameSuffix(items.slice(n - k), change.expectedSuffix)) {
        throw new DivergenceError(
          'the history no longer ends with the transaction’s expectedSuffix; nothing was written',
        );
      }
      const length = n - k + change.replacement.length;
      if (!state.exists) return { ops: fresh(history, change.replacement), length };
      const ops: DeltaOp[] = [];
      for (let i = n - 1; i >= n - k; i--) ops.push({ op: 'delete', path: at(i) });
      change.replacement.forEach((item, i) => {
        ops.push(setItem(n - k + i, item));
      });
      return ops.length > 0 ? { ops, length } : undefined;
    }
    case 'replace_history':
      return { ops: fresh(history, change.items), length: change.items.length };
    case 'pop': {
      const last = items.at(-1);
      if (last === undefined) return undefined;
      return { ops: [{ op: 'delete', path: at(n - 1) }], length: n - 1, popped: last };
    }
    case 'clear':
      if (!state.exists) return undefined;
      return { ops: fresh(history, [], history.life + 1), length: 0 };
  }
};
