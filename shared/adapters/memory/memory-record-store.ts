import { ConflictError } from '../../domain/errors.js';
import { type Clock, systemClock } from '../../ports/clock.js';
import { applyUpdate, conditionsHold, isExpired, keyOf } from '../../ports/conditions.js';
import type { FaultInjector, StoreOp } from '../../ports/faults.js';
import { TransientFaultError } from '../../ports/faults.js';
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

export interface MemoryRecordStoreOptions {
  clock?: Clock;
  faults?: FaultInjector;
  retry?: RetryOptions;
}

const clone = <T>(value: T): T => structuredClone(value);

/** RecordStore in process memory, for unit tests. Each attempt runs without awaiting. */
export class MemoryRecordStore implements RecordStore {
  readonly #items = new Map<string, Item>();
  readonly #clock: Clock;
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;

  constructor(options: MemoryRecordStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
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
      (err) => err instanceof TransientFaultError,
      this.#retry,
    );
  }

  #stored(key: ItemKey): Item | undefined {
    return this.#items.get(keyOf(key));
  }

  #visible(item: Item | undefined): Item | undefined {
    return item && !isExpired(item, this.#clock.now()) ? clone(item) : undefined;
  }

  async get(key: ItemKey): Promise<Item | undefined> {
    checkItemKey(key);
    return this.#run('get', () => this.#visible(this.#stored(key)));
  }

  async put(item: Item, options: WriteOptions = {}): Promise<void> {
    checkItem(item);
    checkConditions(options.conditions);
    const copy = clone(item);
    return this.#run('put', (retried) => {
      const current = this.#stored(item);
      if (!conditionsHold(current, options.conditions)) {
        if (retried && putApplied(current, copy)) return;
        throw new ConflictError(`condition failed for put ${item.pk}/${item.sk}`, clone(current));
      }
      this.#items.set(keyOf(item), copy);
    });
  }

  async update(key: ItemKey, update: UpdateSpec, options: WriteOptions = {}): Promise<Item> {
    checkItemKey(key);
    checkUpdate(update);
    checkConditions(options.conditions);
    const spec = clone(update);
    return this.#run('update', (retried) => {
      const current = this.#stored(key);
      if (!conditionsHold(current, options.conditions)) {
        if (retried && current && updateApplied(current, spec)) return clone(current);
        throw new ConflictError(`condition failed for update ${key.pk}/${key.sk}`, clone(current));
      }
      const next = applyUpdate(key, current, spec);
      this.#items.set(keyOf(key), next);
      return clone(next);
    });
  }

  async delete(key: ItemKey, options: WriteOptions = {}): Promise<void> {
    checkItemKey(key);
    checkConditions(options.conditions);
    return this.#run('delete', (retried) => {
      const current = this.#stored(key);
      if (!conditionsHold(current, options.conditions)) {
        if (retried && deleteApplied(current)) return;
        throw new ConflictError(`condition failed for delete ${key.pk}/${key.sk}`, clone(current));
      }
      this.#items.delete(keyOf(key));
    });
  }

  async transact(ops: TransactOp[]): Promise<void> {
    checkTransaction(ops);
    const copies = clone(ops);
    return this.#run('transact', (retried) => {
      const failed = copies.findIndex((op) => {
        const key = op.kind === 'put' ? op.item : op.key;
        return !conditionsHold(this.#stored(key), op.conditions);
      });
      if (failed >= 0) {
        if (retried && copies.every((op) => this.#applied(op))) return;
        const op = copies[failed] as TransactOp;
        const current = this.#stored(op.kind === 'put' ? op.item : op.key);
        throw new ConflictError(`transaction condition ${failed} failed`, clone(current), failed);
      }
      for (const op of copies) {
        if (op.kind === 'put') this.#items.set(keyOf(op.item), op.item);
        else if (op.kind === 'update') {
          this.#items.set(keyOf(op.key), applyUpdate(op.key, this.#stored(op.key), op.update));
        } else if (op.kind === 'delete') this.#items.delete(keyOf(op.key));
      }
    });
  }

  #applied(op: TransactOp): boolean {
    if (op.kind === 'put') return putApplied(this.#stored(op.item), op.item);
    if (op.kind === 'update') return updateApplied(this.#stored(op.key), op.update);
    if (op.kind === 'delete') return deleteApplied(this.#stored(op.key));
    return true;
  }

  async query(pk: string, options: QueryOptions = {}): Promise<QueryPage> {
    const limit = options.limit ?? DEFAULT_QUERY_LIMIT;
    return this.#run('query', () => {
      const matching = [...this.#items.values()]
        .filter(
          (item) =>
            item.pk === pk &&
            item.sk.startsWith(options.skPrefix ?? '') &&
            (options.after === undefined || item.sk > options.after),
        )
        .sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
      const page = matching.slice(0, limit);
      const items = page.flatMap((item) => this.#visible(item) ?? []);
      const last = page.at(-1);
      return matching.length > limit && last ? { items, next: last.sk } : { items };
    });
  }
}
