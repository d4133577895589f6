/**
 * RecordStore: small mutable records (chain heads, idempotency records, keys, leases) with
 * conditional writes, modelled on DynamoDB's item API and kept portable to SQLite and memory.
 *
 * An item is a flat object keyed by (`pk`, `sk`). Attribute values are JSON values; the
 * attribute `ttl` (epoch seconds), when present, marks the item as expiring.
 *
 * Rules every adapter keeps (checked by test/contract/record-store.contract.ts):
 * - A write whose conditions do not all hold writes nothing and throws `ConflictError` whose
 *   `current` is the item stored now (undefined if none), like DynamoDB's
 *   `ReturnValuesOnConditionCheckFailure: ALL_OLD`.
 * - `transact` applies all its operations or none. If any condition fails -> `ConflictError`
 *   with `index` of the first failing operation and its `current` item.
 * - Reads (`get`, `query`) never return an item whose `ttl` is in the past. Physical removal
 *   happens later (DynamoDB: up to days), and conditions see the stored item until then.
 * - Retryable failures (throttling, transaction conflicts with other in-flight transactions)
 *   are retried with backoff inside the adapter; when retries run out -> `UnavailableError`.
 * - `query` returns a partition's items in ascending `sk` order, strictly after `after`.
 */

import type { JsonValue } from '../domain/canonical.js';

export type { JsonValue };

export type Scalar = string | number | boolean;

export interface ItemKey {
  pk: string;
  sk: string;
}

export type Item = ItemKey & { ttl?: number } & { [attr: string]: JsonValue | undefined };

/**
 * One condition; a write's conditions must all hold.
 * - `{ op: 'exists' }` / `{ op: 'notExists' }`: whether an item is stored under the key.
 * - comparisons on a top-level attribute: the item must exist and carry the attribute.
 * - `{ op: 'any', conditions }`: at least one of them holds (none given: never holds).
 */
export type Condition =
  | { op: 'exists' }
  | { op: 'notExists' }
  | { op: 'eq' | 'ne' | 'lt' | 'lte' | 'gt' | 'gte'; attr: string; value: Scalar }
  | { op: 'attrNotExists'; attr: string }
  | { op: 'any'; conditions: Condition[] };

export interface WriteOptions {
  conditions?: Condition[];
}

export interface UpdateSpec {
  /** Attributes to set (created if the item is absent, like DynamoDB UpdateItem). */
  set?: Record<string, JsonValue>;
  /** Attributes to remove. */
  remove?: string[];
}

export type TransactOp =
  | { kind: 'put'; item: Item; conditions?: Condition[] }
  | { kind: 'update'; key: ItemKey; update: UpdateSpec; conditions?: Condition[] }
  | { kind: 'delete'; key: ItemKey; conditions?: Condition[] }
  | { kind: 'check'; key: ItemKey; conditions: Condition[] };

export interface QueryOptions {
  /** Only items whose sk starts with this prefix. */
  skPrefix?: string;
  /** Exclusive start sk (from a previous page's `next`). */
  after?: string;
  /** Page size, default 100. */
  limit?: number;
}

export interface QueryPage {
  items: Item[];
  next?: string;
}

export interface RecordStore {
  /** Strongly consistent read. */
  get(key: ItemKey): Promise<Item | undefined>;
  put(item: Item, options?: WriteOptions): Promise<void>;
  /** Returns the item as stored after the update. */
  update(key: ItemKey, update: UpdateSpec, options?: WriteOptions): Promise<Item>;
  delete(key: ItemKey, options?: WriteOptions): Promise<void>;
  /** Up to 100 operations on distinct keys, all or nothing. */
  transact(ops: TransactOp[]): Promise<void>;
  query(pk: string, options?: QueryOptions): Promise<QueryPage>;
}

export const MAX_TRANSACT_OPS = 100;
export const DEFAULT_QUERY_LIMIT = 100;
/** Attribute names: letters, digits and underscore, starting with a letter (portable). */
export const ATTR_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
