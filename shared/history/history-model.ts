import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import { DivergenceError } from '../domain/errors.js';
import { sha256Hex } from '../domain/hashing.js';
import type { DeltaOp, JsonObject } from '../domain/state.js';

/**
 * A session's conversation history (an OpenAI Agents SDK `Session`, docs/openai-agents.md) as
 * the state of its stream:
 *
 *   { "items": [item, ...], "life": n, "popped"?: item }
 *
 * `items` the history in order; `life` the number of clears so far (the operation ids of a
 * history are scoped by it: a cleared history forgets them); `popped` the item the last
 * change removed, when it was a pop, so that a pop's answer, like everything else, is
 * recomputed from the chain (a retried pop answers it again). Every change is one delta
 * checkpoint computed here from the state it applies to.
 */

export type HistoryChange =
  | { type: 'append_items'; items: JsonValue[] }
  | { type: 'replace_suffix'; expectedSuffix: JsonValue[]; replacement: JsonValue[] }
  | { type: 'replace_history'; items: JsonValue[] }
  | { type: 'pop' }
  | { type: 'clear' };

export interface SessionHistory {
  items: JsonValue[];
  life: number;
}

export const EMPTY_HISTORY: SessionHistory = { items: [], life: 0 };

/** The history a stream's state holds (a state no change wrote reads as empty). */
export const historyOf = (state: JsonObject): SessionHistory => ({
  items: Array.isArray(state.items) ? state.items : [],
  life: typeof state.life === 'number' ? state.life : 0,
});

/**
 * The fingerprint an operation id is kept with: the change itself as canonical JSON (RFC
 * 8785), not the request that carried it, so a retry recomputed after a crash that sends the
 * same change is recognized, and one that sends another is refused.
 */
export const changeDigest = (change: HistoryChange): string =>
  sha256Hex(canonicalJson({ kind: 'hefesto.history.change', change }));

export const operationIdHash = (operationId: string): string => sha256Hex(operationId);

const same = (a: JsonValue[], b: JsonValue[]): boolean => canonicalJson(a) === canonicalJson(b);

export interface HistoryPlan {
  ops: DeltaOp[];
  /** The history after the change. */
  length: number;
  popped?: JsonValue;
}

const at = (i: number) => `/items/${i}`;

/**
 * The delta that makes `change` on `history` (the state it reads: `exists` false for a
 * stream not written yet, `hasPopped` when the state keeps a popped item), or undefined when
 * the change changes nothing and records no operation id (a pop of an empty history, a clear
 * of a session never written). A replace_suffix
 * whose expectedSuffix is not the history's suffix (compared as canonical JSON) is refused
 * (ErrDivergenceDetected) before anything is written.
 */
export const planChange = (
  history: SessionHistory,
  change: HistoryChange,
  state: { exists: boolean; hasPopped: boolean },
): HistoryPlan | undefined => {
  const plan = planOf(history, change, state);
  // An operation id is recorded even when its transaction changes nothing (as MemorySession
  // records it): the delta then sets the history to itself.
  if (plan || (change.type !== 'append_items' && change.type !== 'replace_suffix')) return plan;
  return {
    ops: [{ op: 'set', path: '/items', value: history.items }],
    length: history.items.length,
  };
};

const planOf = (
  history: SessionHistory,
  change: HistoryChange,
  state: { exists: boolean; hasPopped: boolean },
): HistoryPlan | undefined => {
  const { items } = history;
  const n = items.length;
  const forget: DeltaOp[] = state.hasPopped ? [{ op: 'delete', path: '/popped' }] : [];
  const fresh = (next: JsonValue[]): DeltaOp[] => [
    { op: 'set', path: '/items', value: next },
    { op: 'set', path: '/life', value: history.life },
  ];
  switch (change.type) {
    case 'append_items': {
      if (change.items.length === 0) return undefined;
      const ops: DeltaOp[] = state.exists
        ? change.items.map((value, i) => ({ op: 'set', path: at(n + i), value }))
        : fresh(change.items);
      return { ops: [...ops, ...forget], length: n + change.items.length };
    }
    case 'replace_suffix': {
      const k = change.expectedSuffix.length;
      if (k > n || !same(items.slice(n - k), change.expectedSuffix)) {
        throw new DivergenceError(
          'the history no longer ends with the transaction’s expectedSuffix; nothing was written',
        );
      }
      const ops: DeltaOp[] = [];
      for (let i = n - 1; i >= n - k; i--) ops.push({ op: 'delete', path: at(i) });
      change.replacement.forEach((value, i) => {
        ops.push({ op: 'set', path: at(n - k + i), value });
      });
      const length = n - k + change.replacement.length;
      if (!state.exists) return { ops: fresh(change.replacement), length };
      return ops.length > 0 ? { ops: [...ops, ...forget], length } : undefined;
    }
    case 'replace_history':
      return { ops: [...fresh(change.items), ...forget], length: change.items.length };
    case 'pop': {
      const last = items.at(-1);
      if (last === undefined) return undefined;
      const ops: DeltaOp[] = [
        { op: 'delete', path: at(n - 1) },
        { op: 'set', path: '/popped', value: last },
      ];
      return { ops, length: n - 1, popped: last };
    }
    case 'clear':
      if (!state.exists) return undefined;
      return {
        ops: [
          { op: 'set', path: '/items', value: [] },
          { op: 'set', path: '/life', value: history.life + 1 },
          ...forget,
        ],
        length: 0,
      };
  }
};
