import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ConflictError, InvalidInputError, UnavailableError } from '../../domain/errors.js';
import { type Clock, systemClock } from '../../ports/clock.js';
import { applyUpdate, conditionsHold, isExpired } from '../../ports/conditions.js';
import { type FaultInjector, type StoreOp, TransientFaultError } from '../../ports/faults.js';
import {
  DEFAULT_QUERY_LIMIT,
  type Item,
  type ItemKey,
  type QueryOptions,
  type QueryPage,
  type RecordStore,
  type TransactOp,
  type UpdateSpec,
  type WriteOptions,
} from '../../ports/record-store.js';
import {
  checkConditions,
  checkItem,
  checkItemKey,
  checkTransaction,
  checkUpdate,
} from '../../ports/validate.js';
import { deleteApplied, putApplied, updateApplied } from '../already-applied.js';
import { type RetryOptions, withRetries } from '../retry.js';
import { mkdirDurable } from './durable-fs.js';
import {
  type Check,
  type Durability,
  DurableDatabase,
  type DurableWrite,
  DurableWriteError,
  type RemoteWrites,
  type Write,
  type WriteOutcome,
} from './durable-writer.js';
import { decodeBody, encodeBody, type StoredBody } from './record-codec.js';

export interface LocalRecordStoreOptions {
  /** SQLite database file (its directory is created if missing), or ':memory:'. */
  path: string;
  clock?: Clock;
  faults?: FaultInjector;
  retry?: RetryOptions;
  /** How long a write waits for another connection's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
  /** What a commit survives (durable-writer.ts). Default 'power-loss': an fsync per commit. */
  durability?: Durability;
  /**
   * Another process owns the file and writes it (remote-writer.ts): reads run on a read-only
   * connection, every write is sent there, and opening writes nothing (no schema, no purge).
   */
  remote?: RemoteWrites;
}

export const RECORDS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    ttl INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
  ) WITHOUT ROWID`;

/**
 * Set before the table is created, so only a new database gets them (an existing one keeps
 * what it has): 16 KiB pages keep a row of a few hundred bytes to a KiB within its leaf (on
 * 4 KiB pages a WITHOUT ROWID table spills such rows to overflow pages, mostly empty, and
 * copies whole rows into interior pages), and incremental auto-vacuum lets the writer give
 * pages freed by deletions back to the file system (durable-writer-thread.mjs).
 */
export const NEW_DATABASE_PRAGMAS = ['page_size = 16384', 'auto_vacuum = INCREMENTAL'];

/** Another connection (maybe another process) holds the write lock past busy_timeout. */
const isBusy = (err: unknown) =>
  (err instanceof Database.SqliteError || err instanceof DurableWriteError) &&
  /^SQLITE_(BUSY|LOCKED)/.test(err.code ?? '');
const isRetryable = (err: unknown) => err instanceof TransientFaultError || isBusy(err);

const keyOfOp = (op: TransactOp): ItemKey => (op.kind === 'put' ? op.item : op.key);

/** How often a write is decided again when an item it read changed before it landed. */
const MAX_SWAPS = 64;

/** The writes one call decides on, given the items stored now (read together). */
type Decision<T> = { writes: Write[]; result: T };

/**
 * RecordStore on SQLite (better-sqlite3): the embedded default, one machine, no AWS.
 *
 * Durability: WAL with `synchronous = FULL`, so a write is on disk when the call returns
 * (durability 'power-loss', the default); 'process-crash' commits with NORMAL, which a
 * process crash never loses and a power cut may (the last commits). The file may be the
 * object store's (local-stores.ts): one WAL, one sync per commit for both. Writes run on the durable writer's thread
 * (durable-writer.ts), committed together with the writes that arrive meanwhile (group
 * commit); reads run here, on a connection of their own, and never wait for the writer.
 *
 * A conditional write reads the items it touches here, in one read transaction (a consistent
 * snapshot), evaluates its conditions, and sends its writes with the bodies it read as
 * checks; the writer applies them only if those items are unchanged, inside its transaction
 * (BEGIN IMMEDIATE: atomic against this process and other processes sharing the file). If
 * one changed, the write is decided again on a fresh read. A failed condition is decided on
 * the snapshot: answered here, without a write.
 *
 * Items are stored whole as JSON in `body`; `ttl` is copied to its own column so reads can
 * skip expired items in SQL. Expired items stay visible to conditions until `purgeExpired`
 * removes them (run on open), as DynamoDB's TTL deletion lags expiry.
 */
export class LocalRecordStore implements RecordStore {
  readonly #db: Database.Database;
  readonly #writer: DurableDatabase | undefined;
  readonly #clock: Clock;
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;
  readonly #select: Database.Statement<[string, string], StoredBody>;
  readonly #query: Database.Statement<[QueryParams], { sk: string; body: StoredBody }>;
  readonly #snapshot: Database.Transaction<(keys: ItemKey[]) => Array<StoredBody | undefined>>;
  readonly #memoryWrites: Record<string, Database.Statement>;

  constructor(options: LocalRecordStoreOptions) {
    const inMemory = options.path === ':memory:';
    if (!inMemory) mkdirDurable(dirname(resolve(options.path)));
    this.#clock = options.clock ?? systemClock;
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const remote = inMemory ? undefined : options.remote;
    const db = new Database(options.path, { readonly: !!remote, fileMustExist: !!remote });
    this.#db = db;
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    if (!remote) {
      for (const pragma of NEW_DATABASE_PRAGMAS) db.pragma(pragma);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec(RECORDS_SCHEMA);
    }
    this.#select = db.prepare<[string, string], StoredBody>(
      'SELECT body FROM items WHERE pk = ? AND sk = ?',
    );
    this.#select.pluck();
    // `sk >= @prefix` lets the primary key index start at the prefix.
    this.#query = db.prepare<[QueryParams], { sk: string; body: StoredBody }>(`
      SELECT sk, body FROM items
      WHERE pk = @pk AND sk > @after AND sk >= @prefix
        AND substr(sk, 1, length(@prefix)) = @prefix
        AND (ttl IS NULL OR ttl * 1000 > @now)
      ORDER BY sk LIMIT @limit`);
    this.#snapshot = db.transaction((keys: ItemKey[]) =>
      keys.map((k) => this.#select.get(k.pk, k.sk)),
    );
    // An in-memory database is this connection's alone: its writes run here.
    this.#memoryWrites = inMemory
      ? Object.fromEntries(Object.entries(RECORD_WRITES).map(([n, sql]) => [n, db.prepare(sql)]))
      : {};
    this.#writer = inMemory
      ? undefined
      : new DurableDatabase(resolve(options.path), RECORD_WRITES, {
          lane: 'records',
          busyTimeoutMs,
          ...(options.durability && { durability: options.durability }),
          ...(remote && { remote }),
        });
    // On open, before any other write of ours: one synchronous write is fine here, and so
    // is giving the pages it freed back (a no-op unless the file has incremental vacuum).
    // (Not on a remote's reader: the owner purged when it opened.)
    if (remote) return;
    if (db.prepare(RECORD_WRITES.purge).run(this.#clock.now()).changes > 0 && !inMemory) {
      db.pragma('incremental_vacuum');
    }
  }

  close(): void {
    this.#writer?.close();
    this.#db.close();
  }

  /** Physically removes items whose ttl has passed; returns how many. */
  async purgeExpired(): Promise<number> {
    const now = this.#clock.now();
    const outcome = await this.#send({ checks: [], writes: [['purge', [now]]] });
    return outcome.ok ? outcome.changes : 0;
  }

  #send(write: DurableWrite): Promise<WriteOutcome> {
    if (this.#writer) return this.#writer.write(write);
    // In memory: no other connection can change an item between the read and the write.
    let changes = 0;
    for (const [name, params] of write.writes) {
      changes += (this.#memoryWrites[name] as Database.Statement).run(...params).changes;
    }
    return Promise.resolve({ ok: true, changes });
  }

  /**
   * Runs one attempt at a time; `retried` tells an attempt that an earlier one failed
   * transiently, so a failed condition may be its own earlier write (reply lost).
   */
  #run<T>(op: StoreOp, body: (retried: boolean) => T | Promise<T>): Promise<T> {
    let attempts = 0;
    return withRetries(
      op,
      async () => {
        const retried = attempts++ > 0;
        const fault = this.#faults?.take(op);
        if (fault && fault !== 'reply-lost') throw new TransientFaultError(fault, op);
        const result = await body(retried);
        if (fault === 'reply-lost') throw new TransientFaultError(fault, op);
        return result;
      },
      isRetryable,
      this.#retry,
    );
  }

  /**
   * Reads `keys` together, lets `decide` choose the writes, and sends them checked against
   * what was read; decides again if an item changed before they landed.
   */
  async #swap<T>(keys: ItemKey[], decide: (currents: Array<Item | undefined>) => Decision<T>) {
    for (let round = 0; round < MAX_SWAPS; round++) {
      const bodies =
        keys.length === 1
          ? [this.#select.get(keys[0]?.pk ?? '', keys[0]?.sk ?? '')]
          : this.#snapshot(keys);
      const { writes, result } = decide(bodies.map((b, i) => parseItem(keys[i] as ItemKey, b)));
      if (writes.length === 0) return result;
      const checks: Check[] = keys.map((k, i) => [[k.pk, k.sk], bodies[i] ?? null]);
      const outcome = await this.#send({ checks, writes });
      if (outcome.ok) return result;
    }
    throw new UnavailableError(`records kept changing: ${MAX_SWAPS} writes raced`);
  }

  #conflict(what: string, key: ItemKey, current: Item | undefined, index?: number) {
    return new ConflictError<Item>(
      `condition failed for ${what} ${key.pk}/${key.sk}`,
      current,
      index,
    );
  }

  async get(key: ItemKey): Promise<Item | undefined> {
    checkItemKey(key);
    return this.#run('get', () => {
      const item = parseItem(key, this.#select.get(key.pk, key.sk));
      return item && !isExpired(item, this.#clock.now()) ? item : undefined;
    });
  }

  async put(item: Item, options: WriteOptions = {}): Promise<void> {
    checkItem(item);
    checkConditions(options.conditions);
    return this.#run('put', (retried) =>
      this.#swap([item], ([current]) => {
        if (!conditionsHold(current, options.conditions)) {
          if (retried && putApplied(current, item)) return { writes: [], result: undefined };
          throw this.#conflict('put', item, current);
        }
        return { writes: [upsert(item).write], result: undefined };
      }),
    );
  }

  async update(key: ItemKey, update: UpdateSpec, options: WriteOptions = {}): Promise<Item> {
    checkItemKey(key);
    checkUpdate(update);
    checkConditions(options.conditions);
    return this.#run('update', (retried) =>
      this.#swap([key], ([current]) => {
        if (!conditionsHold(current, options.conditions)) {
          if (retried && current && updateApplied(current, update)) {
            return { writes: [], result: current };
          }
          throw this.#conflict('update', key, current);
        }
        const { write, stored } = upsert(applyUpdate(key, current, update));
        return { writes: [write], result: stored };
      }),
    );
  }

  async delete(key: ItemKey, options: WriteOptions = {}): Promise<void> {
    checkItemKey(key);
    checkConditions(options.conditions);
    return this.#run('delete', (retried) =>
      this.#swap([key], ([current]) => {
        if (!conditionsHold(current, options.conditions)) {
          if (retried && deleteApplied(current)) return { writes: [], result: undefined };
          throw this.#conflict('delete', key, current);
        }
        return { writes: [remove(key)], result: undefined };
      }),
    );
  }

  async transact(ops: TransactOp[]): Promise<void> {
    checkTransaction(ops);
    return this.#run('transact', (retried) =>
      this.#swap(ops.map(keyOfOp), (currents) => {
        const failed = ops.findIndex((op, i) => !conditionsHold(currents[i], op.conditions));
        if (failed >= 0) {
          if (retried && ops.every((op, i) => applied(op, currents[i]))) {
            return { writes: [], result: undefined };
          }
          const op = ops[failed] as TransactOp;
          throw this.#conflict(`transaction op ${failed}`, keyOfOp(op), currents[failed], failed);
        }
        const writes = ops.flatMap((op, i): Write[] => {
          if (op.kind === 'put') return [upsert(op.item).write];
          if (op.kind === 'update')
            return [upsert(applyUpdate(op.key, currents[i], op.update)).write];
          if (op.kind === 'delete') return [remove(op.key)];
          return [];
        });
        // Only checks: the snapshot they were evaluated on is the answer.
        return { writes, result: undefined };
      }),
    );
  }

  async query(pk: string, options: QueryOptions = {}): Promise<QueryPage> {
    const { skPrefix = '', after = '', limit = DEFAULT_QUERY_LIMIT } = options;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new InvalidInputError('query limit must be a positive integer');
    }
    return this.#run('query', () => {
      const now = this.#clock.now();
      const bodies = this.#query.all({ pk, after, prefix: skPrefix, now, limit: limit + 1 });
      const items = bodies.slice(0, limit).map((row) => decodeBody(pk, row.sk, row.body));
      const last = items.at(-1);
      return bodies.length > limit && last ? { items, next: last.sk } : { items };
    });
  }
}

/** What the durable writer runs on it (see DurableDatabase). */
export const RECORD_WRITES = {
  check: 'SELECT body FROM items WHERE pk = ? AND sk = ?',
  upsert: 'INSERT OR REPLACE INTO items (pk, sk, ttl, body) VALUES (?, ?, ?, ?)',
  remove: 'DELETE FROM items WHERE pk = ? AND sk = ?',
  purge: 'DELETE FROM items WHERE ttl IS NOT NULL AND ttl * 1000 <= ?',
};

const parseItem = (key: ItemKey, body: StoredBody | undefined): Item | undefined =>
  body === undefined ? undefined : decodeBody(key.pk, key.sk, body);

/** The write storing `item` (record-codec.ts), and the item as stored (JSON drops `undefined`). */
const upsert = (item: Item): { write: Write; stored: Item } => {
  const { body, stored } = encodeBody(item);
  const ttl = typeof item.ttl === 'number' ? item.ttl : null;
  return { write: ['upsert', [item.pk, item.sk, ttl, body]], stored };
};

const remove = (key: ItemKey): Write => ['remove', [key.pk, key.sk]];

interface QueryParams {
  pk: string;
  after: string;
  prefix: string;
  now: number;
  limit: number;
}

/** Whether a transaction's operation is already in place (checks have nothing to apply). */
const applied = (op: TransactOp, current: Item | undefined): boolean => {
  if (op.kind === 'put') return putApplied(current, op.item);
  if (op.kind === 'update') return updateApplied(current, op.update);
  if (op.kind === 'delete') return deleteApplied(current);
  return true;
};
