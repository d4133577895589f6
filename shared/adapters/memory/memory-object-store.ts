import { createHash } from 'node:crypto';
import { ConflictError } from '../../domain/errors.js';
import type { FaultInjector, StoreOp } from '../../ports/faults.js';
import { TransientFaultError } from '../../ports/faults.js';
import {
  DEFAULT_LIST_LIMIT,
  type ListOptions,
  type ListPage,
  type ObjectInfo,
  type ObjectStore,
  type PutResult,
  type StoredObject,
} from '../../ports/object-store.js';
import { checkObjectKey } from '../../ports/validate.js';
import { type RetryOptions, withRetries } from '../retry.js';

export interface MemoryObjectStoreOptions {
  faults?: FaultInjector;
  retry?: RetryOptions;
}

interface Entry {
  body: Uint8Array;
  etag: string;
}

const etagOf = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');
const sameBytes = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** ObjectStore in process memory, for unit tests. Each attempt runs without awaiting. */
export class MemoryObjectStore implements ObjectStore {
  readonly #objects = new Map<string, Entry>();
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;

  constructor(options: MemoryObjectStoreOptions = {}) {
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
  }

  #run<T>(op: StoreOp, body: () => T): Promise<T> {
    return withRetries(
      op,
      async () => {
        const fault = this.#faults?.take(op);
        if (fault && fault !== 'reply-lost') throw new TransientFaultError(fault, op);
        const result = body();
        if (fault === 'reply-lost') throw new TransientFaultError(fault, op);
        return result;
      },
      (err) => err instanceof TransientFaultError,
      this.#retry,
    );
  }

  #info(key: string, entry: Entry): ObjectInfo {
    return { key, etag: entry.etag, size: entry.body.length };
  }

  async get(key: string): Promise<StoredObject | undefined> {
    checkObjectKey(key);
    return this.#run('get', () => {
      const entry = this.#objects.get(key);
      return entry && { ...this.#info(key, entry), body: entry.body.slice() };
    });
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    return this.#run('head', () => {
      const entry = this.#objects.get(key);
      return entry && this.#info(key, entry);
    });
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    return this.#run('list', () => {
      const keys = [...this.#objects.keys()]
        .filter((k) => k.startsWith(prefix) && (options.after === undefined || k > options.after))
        .sort();
      const page = keys.slice(0, limit);
      const items = page.map((k) => this.#info(k, this.#objects.get(k) as Entry));
      const last = page.at(-1);
      return keys.length > limit && last !== undefined ? { items, next: last } : { items };
    });
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    return this.#run('putIfAbsent', () => {
      const current = this.#objects.get(key);
      if (current) return this.#alreadyThere(key, current, copy);
      const etag = etagOf(copy);
      this.#objects.set(key, { body: copy, etag });
      return { etag, created: true };
    });
  }

  async putIfMatch(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    return this.#run('putIfMatch', () => {
      const current = this.#objects.get(key);
      if (!current || current.etag !== etag) {
        if (current) return this.#alreadyThere(key, current, copy);
        throw new ConflictError(`no object at ${key} to replace`);
      }
      const next = etagOf(copy);
      this.#objects.set(key, { body: copy, etag: next });
      return { etag: next, created: true };
    });
  }

  /** The same bytes already stored is an earlier attempt of this write, not a conflict. */
  #alreadyThere(key: string, current: Entry, body: Uint8Array): PutResult {
    if (sameBytes(current.body, body)) return { etag: current.etag, created: false };
    throw new ConflictError(`object ${key} holds other bytes`, this.#info(key, current));
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    return this.#run('delete', () => {
      this.#objects.delete(key);
    });
  }
}
