import type { DeltaOp, Json, SetRefOp, ValueRef } from '@hefesto/client';

/**
 * The state of one namespace's stream: the namespace, when it was made (search's order
 * across namespaces), the next insertion number (search's order inside one) and its items by
 * key. A write is a change of whole items, sent as ops on `/items/{key}` (RFC 6901), so two
 * workers' puts of one key each set the item whole: never a mix.
 */

export interface StoredItem {
  /** The value inline, or `r`: its ref (a value over the inline limit, in chunks). */
  v?: Json;
  r?: { hash: string; size: number };
  /** createdAt, updatedAt (ms). */
  c: number;
  u: number;
  /** Insertion number: an update keeps it, a delete and put again takes a new one. */
  o: number;
  /** TTL extension: expiry (ms) and the ttl (ms) a read refreshes it by. */
  x?: number;
  t?: number;
  /** Index vectors by field path. */
  e?: { [field: string]: number[] };
}

export interface NamespaceState {
  ns: string[];
  c: number;
  n: number;
  items: { [key: string]: StoredItem };
}

/** One write: items set whole (or null: deleted), on a state made first when `create`. */
export interface Change {
  create?: NamespaceState;
  items: Map<string, StoredItem | null>;
  n?: number;
  /** Refs the new items name that the stream must hold (chunk GC). */
  held: ValueRef[];
}

const HELD = '/_held';
const escapeKey = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');
export const itemPath = (key: string) => `/items/${escapeKey(key)}`;

export const opsOf = (change: Change, base: NamespaceState | null): Array<DeltaOp | SetRefOp> => {
  const ops: Array<DeltaOp | SetRefOp> = [];
  if (change.create) {
    const { ns, c, n } = change.create;
    ops.push(
      { op: 'set', path: '/ns', value: ns },
      { op: 'set', path: '/c', value: c },
      { op: 'set', path: '/n', value: n },
      { op: 'set', path: '/items', value: {} },
    );
  }
  for (const [key, item] of change.items) {
    if (item !== null) ops.push({ op: 'set', path: itemPath(key), value: item as unknown as Json });
    else if (base?.items[key] !== undefined) ops.push({ op: 'delete', path: itemPath(key) });
  }
  if (change.n !== undefined) ops.push({ op: 'set', path: '/n', value: change.n });
  for (const ref of change.held) {
    ops.push({ op: 'set', path: HELD, ref }, { op: 'delete', path: HELD });
  }
  return ops;
};

/** The state after `change`: a new object (the base is shared with reads in flight; never changed). */
export const applyChange = (change: Change, base: NamespaceState | null): NamespaceState => {
  const from = base ?? (change.create as NamespaceState);
  const state: NamespaceState = { ...from, items: { ...from.items } };
  for (const [key, item] of change.items) {
    if (item === null) delete state.items[key];
    else state.items[key] = item;
  }
  if (change.n !== undefined) state.n = change.n;
  return state;
};

/**
 * The hint a checkpoint of this state carries for the compactor (docs/records-v2.md `expiry`):
 * its items' earliest expiry; none when no item has one. The compactor reads the verified
 * state at that time and deletes the items whose `x` has passed by its clock.
 */
export const expiryOf = (
  state: NamespaceState,
): { at: number; path: string; field: string } | undefined => {
  let at: number | undefined;
  for (const item of Object.values(state.items)) {
    if (item.x !== undefined) at = at === undefined ? item.x : Math.min(at, item.x);
  }
  return at === undefined ? undefined : { at: Math.floor(at), path: '/items', field: 'x' };
};
