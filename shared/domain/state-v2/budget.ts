import type { JsonValue } from '../canonical.js';
import { PayloadTooLargeError } from '../errors.js';

/**
 * Work budgets (docs/state-v2.md, "Limits"): what one request may materialise, counted in the
 * logical (expanded) size of the JSON, not in the bytes that travelled. Identical pages and
 * subtrees are one chunk, so a few kilobytes of chunks can name gigabytes of JSON; the
 * budget is checked on the measured extent (measure.ts) before anything is built.
 *
 *   nodes  JSON values: every object, array, string, number, boolean and null
 *   bytes  UTF-8 bytes of the value's RFC 8785 canonical JSON
 */

export interface Extent {
  nodes: number;
  bytes: number;
}

export interface WorkBudget {
  /** JSON values one request may hold materialised (a state and the values it sets). */
  maxNodes: number;
  /** Canonical JSON bytes of the same. */
  maxBytes: number;
}

/** Defaults, sized for a 1,024 MiB Lambda (docs/state-v2.md, "Limits"). */
export const DEFAULT_WORK_BUDGET: WorkBudget = {
  maxNodes: 500_000,
  maxBytes: 80 * 1024 * 1024,
};

/**
 * Heap a materialised state of `extent` takes, on the generous side. Measured (node 20,
 * bench/work-budgets.ts and the figures): 170-340 bytes per JSON value (its object
 * and its tree node), 1.2 bytes per byte of long strings, plus the chunks a read holds.
 */
export const MEMORY_PER_NODE = 320;
export const MEMORY_PER_BYTE = 2;
export const memoryOf = (extent: Extent): number =>
  extent.nodes * MEMORY_PER_NODE + extent.bytes * MEMORY_PER_BYTE;

export const NO_EXTENT: Extent = { nodes: 0, bytes: 0 };

export const plus = (a: Extent, b: Extent): Extent => ({
  nodes: a.nodes + b.nodes,
  bytes: a.bytes + b.bytes,
});

/**
 * Throws ErrPayloadTooLarge when `extent` is over `budget`. `what` says what was counted,
 * for the message ("the state at seq 7", "op 3's ref").
 */
export const checkBudget = (extent: Extent, budget: WorkBudget, what: string): void => {
  if (extent.nodes > budget.maxNodes) {
    throw new PayloadTooLargeError(
      `${what} expands to at least ${extent.nodes} JSON values; a request may work on at most ${budget.maxNodes}`,
      { budget: 'stateNodes', limit: budget.maxNodes, needed: extent.nodes },
    );
  }
  if (extent.bytes > budget.maxBytes) {
    throw new PayloadTooLargeError(
      `${what} expands to at least ${extent.bytes} bytes of JSON; a request may work on at most ${budget.maxBytes}`,
      { budget: 'stateBytes', limit: budget.maxBytes, needed: extent.bytes },
    );
  }
};

/** JSON values in `value` (itself included), without recursion. */
export const countNodes = (value: JsonValue): number => {
  let n = 0;
  const stack: JsonValue[] = [value];
  while (stack.length > 0) {
    const v = stack.pop() as JsonValue;
    n++;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) for (const item of v) stack.push(item);
    else for (const key in v) stack.push(v[key] as JsonValue);
  }
  return n;
};
