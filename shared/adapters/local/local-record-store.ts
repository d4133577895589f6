import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ConflictError, InvalidInputError } from '../../domain/errors.js';
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

export interface LocalRecordStoreOptions {
  /** SQLite database file (its directory is created if missing), or ':memory:'. */
  path: string;
  clock?: Clock;
  faults?: FaultInjector;
  retry?: RetryOptions;
  /** How long a write waits for another connection's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    ttl INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
  ) WITHOUT ROWID`;

/** Another connection (maybe another process) holds the lock past busy_timeout. */
const isBusy = (err: unknown) =>
  err instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(err.code);
const isRetryable = (err: unknown) => err instanceof TransientFaultError || isBusy(err);

const keyOfOp = (op: TransactOp): ItemKey => (op.kind === 'put' ? op.item : op.key);

/**
 * RecordStore on SQLite (better-sqlite3): the embedded default, one machine, no AWS.
 *
 * Durability: WAL with `synchronous = FULL`, so a write is on disk when the call returns
 * (NORMAL may lose the last commits on power loss). Each conditional write reads the current
 * row, evaluates its conditions and writes inside one `BEGIN IMMEDIATE` transaction, so it is
 * atomic against other calls and against other processes sharing the file.
 *
 * Items are stored whole as JSON in `body`; `ttl` is copied to its own column so reads can
 * skip expired items in SQL. Expired items stay visible to conditions until `purgeExpired`
 * removes them (run on open), as DynamoDB's TTL deletion lags expiry.
 */
export class LocalRecordStore implements RecordStore {
  readonly #db: Database.Database;
  readonly #clock: Clock;
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;
  readonly #select: Database.Statement<[string, string], string>;
  readonly #upsert: Database.Statement<[string, string, number | null, string]>;
  readonly #remove: Database.Statement<[string, string]>;
  readonly #query: Database.Statement<[QueryParams], string>;
  readonly #purge: Database.Statement<[number]>;
  readonly #tx: Database.Transaction<(fn: () => unknown) => unknown>;

  constructor(options: LocalRecordStoreOptions) {
    if (options.path !== ':memory:') mkdirDurable(dirname(resolve(options.path)));
    this.#clock = options.clock ?? systemClock;
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
    const db = new Database(options.path);
    this.#db = db;
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(SCHEMA);
    this.#select = db.prepare<[string, string], string>(
      'SELECT body FROM items WHERE pk = ? AND sk = ?',
    );
    this.#select.pluck();
    this.#upsert = db.prepare(
      'INSERT OR REPLACE INTO items (pk, sk, ttl, body) VALUES (?, ?, ?, ?)',
    );
    this.#remove = db.prepare('DELETE FROM items WHERE pk = ? AND sk = ?');
    // `sk >= @prefix` lets the primary key index start at the prefix.
    this.#query = db.prepare<[QueryParams], string>(`
      SELECT body FROM items
      WHERE pk = @pk AND sk > @after AND sk >= @prefix
        AND substr(sk, 1, length(@prefix)) = @prefix
        AND (ttl IS NULL OR ttl * 1000 > @now)
      ORDER BY sk LIMIT @limit`);
    this.#query.pluck();
    this.#purge = db.prepare('DELETE FROM items WHERE ttl IS NOT NULL AND ttl * 1000 <= ?');
    this.#tx = db.transaction((fn: () => unknown) => fn());
    this.purgeExpired();
  }

  close(): void {
    this.#db.close();
  }

  /** Physically removes items whose ttl has passed; returns how many. */
  purgeExpired(): number {
    return this.#purge.run(this.#clock.now()).changes;
  }

  /**
   * Runs one attempt at a time; `retried` tells an attempt that an earlier one failed
   * transiently, so a failed condition may be its own earlier write (reply lost).
   */
  #run<T>(op: StoreOp, body: (retried: boolean) => T): Promise<T> {
    let attempts = 0;
    return withRetries(
      op,
      async () => {
        const retried = attempts++ > 0;
        const fault = this.#faults?.take(op);
        if (fault && fault !== 'reply-lost') throw new TransientFaultError(fault, op);
        const result = body(retried);
        if (fault === 'reply-lost') throw new TransientFaultError(fault, op);
        return result;
      },
      isRetryable,
      this.#retry,
    );
  }

  #atomically<T>(fn: () => T): T {
    return this.#tx.immediate(fn) as T;
  }

  #stored(key: ItemKey): Item | undefined {
    const body = this.#select.get(key.pk, key.sk);
    return body === undefined ? undefined : (JSON.parse(body) as Item);
  }

  /** Writes the item and returns it as stored (JSON drops `undefined` attributes). */
  #write(item: Item): Item {
    const body = JSON.stringify(item);
    this.#upsert.run(item.pk, item.sk, typeof item.ttl === 'number' ? item.ttl : null, body);
    return JSON.parse(body) as Item;
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
      const item = this.#stored(key);
      return item && !isExpired(item, this.#clock.now()) ? item : undefined;
    });
  }

  async put(item: Item, options: WriteOptions = {}): Promise<void> {
    checkItem(item);
    checkConditions(options.conditions);
    return this.#run('put', (retried) =>
      this.#atomically(() => {
        const current = this.#stored(item);
        if (!conditionsHold(current, options.conditions)) {
          if (retried && putApplied(current, item)) return;
          throw this.#conflict('put', item, current);
        }
        this.#write(item);
      }),
    );
  }

  async update(key: ItemKey, update: UpdateSpec, options: WriteOptions = {}): Promise<Item> {
    checkItemKey(key);
    checkUpdate(update);
    checkConditions(options.conditions);
    return this.#run('update', (retried) =>
      this.#atomically(() => {
        const current = this.#stored(key);
        if (!conditionsHold(current, options.conditions)) {
          if (retried && current && updateApplied(current, update)) return current;
          throw this.#conflict('update', key, current);
        }
        return this.#write(applyUpdate(key, current, update));
      }),
    );
  }

  async delete(key: ItemKey, options: WriteOptions = {}): Promise<void> {
    checkItemKey(key);
    checkConditions(options.conditions);
    return this.#run('delete', (retried) =>
      this.#atomically(() => {
        const current = this.#stored(key);
        if (!conditionsHold(current, options.conditions)) {
          if (retried && deleteApplied(current)) return;
          throw this.#conflict('delete', key, current);
        }
        this.#remove.run(key.pk, key.sk);
      }),
    );
  }

  async transact(ops: TransactOp[]): Promise<void> {
    checkTransaction(ops);
    return this.#run('transact', (retried) =>
      this.#atomically(() => {
        const currents = ops.map((op) => this.#stored(keyOfOp(op)));
        const failed = ops.findIndex((op, i) => !conditionsHold(currents[i], op.conditions));
        if (failed >= 0) {
          if (retried && ops.every((op, i) => applied(op, currents[i]))) return;
          const op = ops[failed] as TransactOp;
          throw this.#conflict(`transaction op ${failed}`, keyOfOp(op), currents[failed], failed);
        }
        ops.forEach((op, i) => {
          if (op.kind === 'put') this.#write(op.item);
          else if (op.kind === 'update') this.#write(applyUpdate(op.key, currents[i], op.update));
          else if (op.kind === 'delete') this.#remove.run(op.key.pk, op.key.sk);
        });
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
      const items = bodies.slice(0, limit).map((body) => JSON.parse(body) as Item);
      const last = items.at(-1);
      return bodies.length > limit && last ? { items, next: last.sk } : { items };
    });
  }
}

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
