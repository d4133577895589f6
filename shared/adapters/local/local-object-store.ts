import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { ConflictError, InvalidInputError, UnavailableError } from '../../domain/errors.js';
import { type FaultInjector, type StoreOp, TransientFaultError } from '../../ports/faults.js';
import {
  DEFAULT_LIST_LIMIT,
  type ListOptions,
  type ListPage,
  type ObjectInfo,
  type ObjectStore,
  type PutOptions,
  type PutResult,
  type StoredObject,
} from '../../ports/object-store.js';
import { checkObjectKey } from '../../ports/validate.js';
import { type RetryOptions, withRetries } from '../retry.js';
import { acquireDirLock } from './dir-lock.js';
import { mkdirDurable } from './durable-fs.js';
import {
  type Durability,
  DurableDatabase,
  DurableWriteError,
  type RemoteWrites,
} from './durable-writer.js';
import { decodeObject, encodeObject } from './object-codec.js';
import { ensureLayout, type LayoutResult } from './object-layout.js';
import { etagOf, OBJECT_WRITES, OBJECTS_DB, openObjectsDb } from './objects-db.js';

export interface LocalObjectStoreOptions {
  /**
   * Data directory; created if missing. Holds `objects.sqlite` (objects-db.ts), `LAYOUT` (its
   * layout version, object-layout.ts) and the lock `LOCK.sqlite` (dir-lock.ts).
   */
  dir: string;
  faults?: FaultInjector;
  retry?: RetryOptions;
  /** What a commit survives (durable-writer.ts). Default 'power-loss': an fsync per commit. */
  durability?: Durability;
  /**
   * The record store writes this store's file too (`new LocalRecordStore({ path:
   * objects.path })`, as local-stores.ts opens them): a put with `syncWithCommit` is then
   * committed without a sync of its own, since the record commit that follows it syncs the
   * one WAL both are in. Without it every put syncs (two files: no order between their syncs).
   */
  sharesFileWithRecords?: boolean;
  /**
   * Another process owns the directory and writes it (the multi-process server's writer,
   * remote-writer.ts): this store takes no lock, moves no layout, reads on a read-only
   * connection and sends every write there. The owner must have opened it first.
   */
  remote?: RemoteWrites;
}

/** Another process holds SQLite's write lock past busy_timeout, or a transient I/O error. */
const isRetryable = (err: unknown) =>
  err instanceof TransientFaultError ||
  (err instanceof DurableWriteError && /^SQLITE_(BUSY|LOCKED)/.test(err.code ?? ''));

/** Characters a key may hold: a prefix with any other character matches no key. */
const KEY_CHARS = /^[A-Za-z0-9!_.*'()\-/=:@+]*$/;
/** Past every key: keys are printable ASCII, below 0x7f. */
const KEY_END = '\x7f';
/** How often a conditional put is tried again when the row changed under it. */
const MAX_SWAPS = 64;

interface Row {
  etag: string;
  size: number;
}

/**
 * ObjectStore on the local machine: the embedded default, one machine, no AWS.
 *
 * One process owns a data directory (a lock the kernel drops when it dies; see dir-lock.ts).
 * Opening it moves an older object layout to the current one first (object-layout.ts).
 *
 * Objects are rows of `objects.sqlite` (objects-db.ts). Reads run on this thread, on a
 * connection of their own (SQLite WAL: a reader never waits for the writer). Writes go to the
 * durable writer's thread (durable-writer.ts) and are committed there with the writes that
 * arrive meanwhile, in one transaction (group commit); a put is answered once that
 * transaction is durable (WAL, synchronous=FULL).
 *
 * putIfAbsent / putIfMatch: read the current etag here, decide, and send the write with the
 * etag read (none for putIfAbsent) as its check; the writer applies it only if the row still
 * has that etag, inside its transaction, so a conditional put is atomic. If it changed (a
 * concurrent put of this process or another), read again and decide again.
 *
 * Methods are async so that a bad argument rejects the promise rather than throwing.
 */
export class LocalObjectStore implements ObjectStore {
  readonly #db: Database.Database;
  readonly #writer: DurableDatabase;
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;
  readonly #defers: boolean;
  readonly #row: Database.Statement<[string], Row>;
  readonly #body: Database.Statement<[string], StoredObject>;
  readonly #list: Database.Statement<[ListParams], ObjectInfo>;
  #release: (() => void) | undefined;
  /** What opening did to the layout (a migration, to be logged). */
  readonly layout: LayoutResult;
  /** The database file (`objects.sqlite`), for a record store to share. */
  readonly path: string;

  constructor(options: LocalObjectStoreOptions) {
    const dir = resolve(options.dir);
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
    this.#defers = options.sharesFileWithRecords === true;
    this.path = join(dir, OBJECTS_DB);
    if (options.remote) {
      this.layout = {};
      this.#db = openObjectsDb(this.path, { readonly: true });
      this.#release = () => {};
    } else {
      mkdirDurable(dir);
      const release = acquireDirLock(dir);
      try {
        this.layout = ensureLayout(dir);
        this.#db = openObjectsDb(this.path);
      } catch (err) {
        release();
        throw err;
      }
      this.#release = release;
    }
    this.#writer = new DurableDatabase(this.path, OBJECT_WRITES, {
      lane: 'objects',
      ...(options.durability && { durability: options.durability }),
      ...(options.remote && { remote: options.remote }),
    });
    this.#row = this.#db.prepare('SELECT etag, size FROM objects WHERE key = ?');
    this.#body = this.#db.prepare('SELECT key, etag, size, body FROM objects WHERE key = ?');
    // Keys are ASCII and SQLite compares TEXT bytewise: SQL order is byte order. The upper
    // bound keeps a prefix's scan inside the prefix.
    this.#list = this.#db.prepare(`
      SELECT key, etag, size FROM objects
      WHERE key > @after AND key >= @prefix AND key < @end
      ORDER BY key LIMIT @limit`);
  }

  /** Releases the data directory. The store cannot be used afterwards. */
  close(): void {
    if (!this.#release) return;
    this.#release();
    this.#release = undefined;
    this.#writer.close();
    this.#db.close();
  }

  #run<T>(op: StoreOp, body: () => T | Promise<T>): Promise<T> {
    if (!this.#release) return Promise.reject(new UnavailableError('object store is closed'));
    return withRetries(
      op,
      async () => {
        const fault = this.#faults?.take(op);
        if (fault && fault !== 'reply-lost') throw new TransientFaultError(fault, op);
        const result = await body();
        if (fault === 'reply-lost') throw new TransientFaultError(fault, op);
        return result;
      },
      isRetryable,
      this.#retry,
    );
  }

  async get(key: string): Promise<StoredObject | undefined> {
    checkObjectKey(key);
    return this.#run('get', () => this.#read(key));
  }

  /** The object at `key` as it is (object-codec.ts), or undefined. */
  async #read(key: string): Promise<StoredObject | undefined> {
    const row = this.#body.get(key);
    if (!row) return undefined;
    const body = await decodeObject(row.body as unknown as Buffer, row.size);
    return { key, etag: row.etag, size: row.size, body };
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    return this.#run('head', () => {
      const row = this.#row.get(key);
      return row && { key, etag: row.etag, size: row.size };
    });
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const { after = '', limit = DEFAULT_LIST_LIMIT } = options;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new InvalidInputError('list limit must be a positive integer');
    }
    return this.#run('list', () => {
      if (!KEY_CHARS.test(prefix)) return { items: [] };
      const end = prefix === '' ? KEY_END : prefixEnd(prefix);
      const rows = this.#list.all({ after, prefix, end, limit: limit + 1 });
      const items = rows.slice(0, limit).map((r) => ({ key: r.key, etag: r.etag, size: r.size }));
      const last = items.at(-1);
      return rows.length > limit && last ? { items, next: last.key } : { items };
    });
  }

  async putIfAbsent(key: string, body: Uint8Array, options?: PutOptions): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    const defer = this.#defers && options?.syncWithCommit === true;
    return this.#run('putIfAbsent', () =>
      this.#swap(
        key,
        copy,
        (current) => (current ? alreadyThere(key, current, copy) : null),
        defer,
      ),
    );
  }

  async putIfMatch(
    key: string,
    body: Uint8Array,
    etag: string,
    options?: PutOptions,
  ): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    const defer = this.#defers && options?.syncWithCommit === true;
    return this.#run('putIfMatch', () =>
      this.#swap(
        key,
        copy,
        (current) => {
          if (!current) throw new ConflictError(`no object at ${key} to replace`);
          return current.etag === etag ? current.etag : alreadyThere(key, current, copy);
        },
        defer,
      ),
    );
  }

  /**
   * Writes `body` at `key` if `decide`, given the row read now, answers the etag the row must
   * still have (null: no row); an answer that is a PutResult is the call's result, unwritten.
   */
  async #swap(
    key: string,
    body: Uint8Array,
    decide: (current: StoredObject | undefined) => string | null | PutResult,
    deferSync: boolean,
  ): Promise<PutResult> {
    const etag = etagOf(body);
    const stored = await encodeObject(body);
    for (let round = 0; round < MAX_SWAPS; round++) {
      const expected = decide(await this.#read(key));
      if (expected !== null && typeof expected === 'object') return expected;
      const outcome = await this.#writer.write({
        checks: [[[key], expected]],
        writes: [['upsert', [key, etag, body.length, stored]]],
        ...(deferSync && { deferSync }),
      });
      if (outcome.ok) return { etag, created: true };
    }
    throw new UnavailableError(`object ${key} kept changing: ${MAX_SWAPS} puts raced`);
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    return this.#run('delete', async () => {
      await this.#writer.write({ checks: [], writes: [['remove', [key]]] });
    });
  }
}

/** The same bytes already stored is an earlier attempt of this write, not a conflict. */
const alreadyThere = (key: string, current: StoredObject, body: Uint8Array): PutResult => {
  const { etag, size } = current;
  if (Buffer.from(current.body).equals(body)) return { etag, created: false };
  throw new ConflictError<ObjectInfo>(`object ${key} holds other bytes`, { key, etag, size });
};

interface ListParams {
  after: string;
  prefix: string;
  end: string;
  limit: number;
}

/** The least string above every string starting with `prefix` (ASCII, non-empty). */
const prefixEnd = (prefix: string): string =>
  prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
