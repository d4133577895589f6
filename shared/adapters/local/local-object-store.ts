import { createHash } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConflictError, InvalidInputError, UnavailableError } from '../../domain/errors.js';
import { type FaultInjector, type StoreOp, TransientFaultError } from '../../ports/faults.js';
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
import { acquireDirLock } from './dir-lock.js';
import { fsyncDir, mkdirDurable } from './durable-fs.js';
import { ensureLayout, type LayoutResult } from './object-layout.js';
import { keysWithPrefix, keyToPath } from './object-paths.js';

export interface LocalObjectStoreOptions {
  /**
   * Data directory; created if missing. Holds `objects/` (object-paths.ts), `LAYOUT` (its
   * version, object-layout.ts), `tmp/`, and the lock `LOCK.sqlite` (dir-lock.ts).
   */
  dir: string;
  faults?: FaultInjector;
  retry?: RetryOptions;
}

const RETRYABLE_FS_CODES = new Set(['EAGAIN', 'EBUSY', 'EINTR', 'EMFILE', 'ENFILE']);
const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;
const isRetryable = (err: unknown) =>
  err instanceof TransientFaultError || RETRYABLE_FS_CODES.has(errno(err) ?? '');

const etagOf = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');

const readIfPresent = (path: string): Uint8Array | undefined => {
  try {
    const buf = readFileSync(path);
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  } catch (err) {
    if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return undefined;
    throw err;
  }
};

/**
 * ObjectStore on the local file system: the embedded default, one machine, no AWS.
 *
 * One process owns a data directory (a lock the kernel drops when it dies; see dir-lock.ts).
 * Opening it moves an older object layout to the current one first (object-layout.ts). Every
 * attempt runs synchronously, so no two calls of this process interleave: the check and the
 * write of a conditional put happen with nothing in between, which makes them atomic here.
 *
 * putIfAbsent, durable and create-only:
 * 1. write the bytes to `tmp/<n>` and fsync it; a crash leaves only a temp file, removed on
 *    the next open;
 * 2. hard-link it at the object's path (fails if something is there: never overwrites) and
 *    fsync the parent directory; a crash before the fsync may lose the link: the write was
 *    never acknowledged, and a retry writes it again;
 * 3. unlink the temp file.
 * putIfMatch is the same with `rename` over the current file in step 2.
 *
 * Methods are async so that a bad argument rejects the promise rather than throwing.
 */
export class LocalObjectStore implements ObjectStore {
  readonly #objects: string;
  readonly #tmp: string;
  readonly #faults: FaultInjector | undefined;
  readonly #retry: RetryOptions;
  #release: (() => void) | undefined;
  #tmpCount = 0;
  /** What opening did to the layout (a migration, to be logged). */
  readonly layout: LayoutResult;

  constructor(options: LocalObjectStoreOptions) {
    const dir = resolve(options.dir);
    this.#objects = join(dir, 'objects');
    this.#tmp = join(dir, 'tmp');
    this.#faults = options.faults;
    this.#retry = options.retry ?? {};
    mkdirDurable(dir);
    const release = acquireDirLock(dir);
    try {
      this.layout = ensureLayout(dir);
      // Left by a process that died mid-write; we own the directory now, so none is in use.
      rmSync(this.#tmp, { recursive: true, force: true });
      mkdirSync(this.#tmp);
    } catch (err) {
      release();
      throw err;
    }
    this.#release = release;
  }

  /** Releases the data directory. The store cannot be used afterwards. */
  close(): void {
    this.#release?.();
    this.#release = undefined;
  }

  #run<T>(op: StoreOp, body: () => T): Promise<T> {
    if (!this.#release) return Promise.reject(new UnavailableError('object store is closed'));
    return withRetries(
      op,
      async () => {
        const fault = this.#faults?.take(op);
        if (fault && fault !== 'reply-lost') throw new TransientFaultError(fault, op);
        const result = body();
        if (fault === 'reply-lost') throw new TransientFaultError(fault, op);
        return result;
      },
      isRetryable,
      this.#retry,
    );
  }

  #pathOf(key: string): string {
    return join(this.#objects, ...keyToPath(key));
  }

  async get(key: string): Promise<StoredObject | undefined> {
    checkObjectKey(key);
    return this.#run('get', () => {
      const body = readIfPresent(this.#pathOf(key));
      return body && { key, etag: etagOf(body), size: body.length, body };
    });
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    return this.#run('head', () => {
      const body = readIfPresent(this.#pathOf(key));
      return body && { key, etag: etagOf(body), size: body.length };
    });
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const { after, limit = DEFAULT_LIST_LIMIT } = options;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new InvalidInputError('list limit must be a positive integer');
    }
    return this.#run('list', () => {
      // Keys are ASCII, so string order is byte order.
      const keys = keysWithPrefix(this.#objects, prefix)
        .filter((k) => after === undefined || k > after)
        .sort();
      const items: ObjectInfo[] = [];
      for (const key of keys.slice(0, limit)) {
        const body = readIfPresent(this.#pathOf(key));
        if (body) items.push({ key, etag: etagOf(body), size: body.length });
      }
      const last = items.at(-1);
      return keys.length > limit && last ? { items, next: last.key } : { items };
    });
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    return this.#run('putIfAbsent', () => {
      const path = this.#pathOf(key);
      const current = readIfPresent(path);
      if (current) return this.#alreadyThere(key, current, copy);
      const tmp = this.#writeTemp(copy);
      try {
        mkdirDurable(dirname(path));
        try {
          linkSync(tmp, path);
        } catch (err) {
          const raced = errno(err) === 'EEXIST' && readIfPresent(path);
          if (raced) return this.#alreadyThere(key, raced, copy);
          throw err;
        }
        fsyncDir(dirname(path));
        return { etag: etagOf(copy), created: true };
      } finally {
        rmSync(tmp, { force: true });
      }
    });
  }

  async putIfMatch(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    checkObjectKey(key);
    const copy = body.slice();
    return this.#run('putIfMatch', () => {
      const path = this.#pathOf(key);
      const current = readIfPresent(path);
      if (!current) throw new ConflictError(`no object at ${key} to replace`);
      if (etagOf(current) !== etag) return this.#alreadyThere(key, current, copy);
      const tmp = this.#writeTemp(copy);
      try {
        renameSync(tmp, path);
      } catch (err) {
        rmSync(tmp, { force: true });
        throw err;
      }
      fsyncDir(dirname(path));
      return { etag: etagOf(copy), created: true };
    });
  }

  /** The same bytes already stored is an earlier attempt of this write, not a conflict. */
  #alreadyThere(key: string, current: Uint8Array, body: Uint8Array): PutResult {
    const etag = etagOf(current);
    if (Buffer.from(current).equals(body)) return { etag, created: false };
    throw new ConflictError<ObjectInfo>(`object ${key} holds other bytes`, {
      key,
      etag,
      size: current.length,
    });
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    return this.#run('delete', () => {
      const path = this.#pathOf(key);
      try {
        unlinkSync(path);
      } catch (err) {
        if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return;
        throw err;
      }
      fsyncDir(dirname(path));
      this.#pruneEmptyDirs(dirname(path));
    });
  }

  #writeTemp(body: Uint8Array): string {
    const tmp = join(this.#tmp, `${process.pid}-${++this.#tmpCount}`);
    const fd = openSync(tmp, 'wx');
    try {
      for (let off = 0; off < body.length; ) off += writeSync(fd, body, off, body.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return tmp;
  }

  /** Removes directories emptied by a delete, up to (not including) `objects/`. */
  #pruneEmptyDirs(dir: string): void {
    for (let d = dir; d.startsWith(this.#objects) && d !== this.#objects; d = dirname(d)) {
      // rmdir refuses a directory that is not empty: no listing (O(entries)) per delete.
      try {
        rmdirSync(d);
      } catch (err) {
        const code = errno(err);
        if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return;
        throw err;
      }
    }
  }
}
