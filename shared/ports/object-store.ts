/**
 * ObjectStore: the only door to immutable blobs (ledger segments, snapshots).
 *
 * Rules every adapter keeps (checked by test/contract/object-store.contract.ts):
 * - `putIfAbsent` creates the key only if nothing is stored there (S3 `If-None-Match: *`).
 *   If an object is already there with the *same bytes*, the call succeeds with
 *   `created: false`: a retry whose first attempt was written but whose reply was lost sees
 *   its own write, never a conflict. Different bytes -> `ConflictError` carrying the current
 *   object's info.
 * - `putIfMatch` replaces the object only if its current etag equals `etag` (S3 `If-Match`);
 *   missing key or other etag -> `ConflictError` (again: same bytes already there = success).
 * - Retryable failures (throttling, 503 SlowDown, S3 409 ConditionalRequestConflict) are
 *   retried with backoff inside the adapter; when retries run out -> `UnavailableError`.
 * - `list` returns keys in ascending byte order, strictly after `after`, at most `limit`.
 */

export interface ObjectInfo {
  key: string;
  /** Opaque version tag: changes whenever the object's bytes change. */
  etag: string;
  size: number;
}

export interface StoredObject extends ObjectInfo {
  body: Uint8Array;
}

export interface PutResult {
  etag: string;
  /** false when the same bytes were already stored (an earlier attempt of this write). */
  created: boolean;
}

/** How a put may be made durable (adapters that cannot use it ignore it). */
export interface PutOptions {
  /**
   * The caller acknowledges nothing that needs this object until a record commit it makes
   * afterwards is durable (an append's segment: the append is answered after its head's
   * transaction). A store whose objects share one file with the records (the embedded
   * store's one database, local-object-store.ts) then commits the object without a sync of
   * its own: the commit's sync makes both durable, in order. Default false: durable when
   * the call returns.
   */
  syncWithCommit?: boolean;
}

export interface ListOptions {
  /** Exclusive start key (a key from a previous page's `next`). */
  after?: string;
  /** Page size; adapters may return fewer. Default 1000. */
  limit?: number;
}

export interface ListPage {
  items: ObjectInfo[];
  /** Pass as `after` to get the next page; undefined on the last page. */
  next?: string;
}

export interface ObjectStore {
  get(key: string): Promise<StoredObject | undefined>;
  head(key: string): Promise<ObjectInfo | undefined>;
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  putIfAbsent(key: string, body: Uint8Array, options?: PutOptions): Promise<PutResult>;
  putIfMatch(key: string, body: Uint8Array, etag: string, options?: PutOptions): Promise<PutResult>;
  /** Deleting a missing key is not an error. */
  delete(key: string): Promise<void>;
}

export const DEFAULT_LIST_LIMIT = 1000;

/** Object keys: printable ASCII without spaces or backslashes, 1..1024 bytes, no `..` part. */
export const OBJECT_KEY_PATTERN = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9!_.*'()\-/=:@+]{1,1024}$/;
