import { randomBytes } from 'node:crypto';
import { ConflictError, ContentSealedError, InvalidFormatError } from '../domain/errors.js';
import { deriveStreamKeys, type StreamKeys } from '../domain/privacy/stream-keys.js';
import type { SegmentKeys } from '../domain/segment-body.js';
import type { KeyWrapper } from '../ports/key-wrapper.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { streamKeyKey } from './storage-keys.js';

/**
 * The stream keys, created once per stream and cached (docs/privacy.md, Decision 3).
 *
 * The key record (`t#{tenant}#s#{stream}` / `key`) holds the stream secret wrapped by the
 * tenant's KEK, the wrapper's id and the key's id. Creating it:
 *
 *   1. Read the record; there: unwrap it (one KMS Decrypt per stream per cold process).
 *   2. Absent: the wrapper generates a secret (KMS GenerateDataKey) and the record is put on
 *      condition it does not exist. Dies before the put: nothing is stored; the secret is
 *      lost with the process, and nothing was sealed under it (sealing starts after).
 *   3. The put lost (ConflictError): another writer's first append created it: use the
 *      stored record (unwrap it), drop ours. Two racing first appends cannot make two keys.
 *
 * Unwrapped keys are cached (bounded, least recently used out), so an append makes no KMS
 * call. A record the wrapper cannot unwrap (another key store, an edited or moved record) is
 * ContentSealedError: the stream's content cannot be opened, and nothing is written under a
 * new key in its place.
 */

export interface StreamKeyset {
  keyId: string;
  keys: StreamKeys;
  /** What the segment codec takes. */
  segment: SegmentKeys;
}

export interface StreamKeyringOptions {
  /** Entries kept unwrapped (default 10,000 streams, ~100 B of keys each). */
  maxEntries?: number;
  /** A new key's id (default 16 random bytes, hex). */
  newKeyId?: () => string;
}

const RECORD_VERSION = 1;

export class StreamKeyring {
  readonly #cache = new Map<string, Promise<StreamKeyset | undefined>>();
  readonly #max: number;
  readonly #newKeyId: () => string;

  constructor(
    readonly records: RecordStore,
    readonly wrapper: KeyWrapper,
    options: StreamKeyringOptions = {},
  ) {
    this.#max = options.maxEntries ?? 10_000;
    this.#newKeyId = options.newKeyId ?? (() => randomBytes(16).toString('hex'));
  }

  /** The stream's keys, or undefined when it has none (a stream written in the clear). */
  forRead(tenant: string, stream: string): Promise<StreamKeyset | undefined> {
    return this.#cached(tenant, stream, false);
  }

  /**
   * A new stream's keys (its first append, head seq 0): the stored record, created (once,
   * race-safe) when there is none. The record is read even on a cache hit: a deleted and
   * recreated stream's cached key belongs to its previous life, whose record was deleted with
   * it; the cached key is used only when the stored record still names it.
   */
  async forWrite(tenant: string, stream: string): Promise<StreamKeyset> {
    const stored = await this.records.get(streamKeyKey(tenant, stream));
    const hit = stored && this.#cache.get(`${tenant}/${stream}`);
    const cached = hit ? await hit.catch(() => undefined) : undefined;
    if (cached && cached.keyId === stored?.keyId) return cached;
    this.forget(tenant, stream);
    return (await this.#cached(tenant, stream, true)) as StreamKeyset;
  }

  /** Forgets a stream's keys (its record was deleted with the stream). */
  forget(tenant: string, stream: string): void {
    this.#cache.delete(`${tenant}/${stream}`);
  }

  #cached(tenant: string, stream: string, create: boolean): Promise<StreamKeyset | undefined> {
    const id = `${tenant}/${stream}`;
    const hit = this.#cache.get(id);
    if (hit) {
      this.#cache.delete(id); // most recently used goes last
      this.#cache.set(id, hit);
      return hit;
    }
    const loading = this.#load(tenant, stream, create);
    this.#cache.set(id, loading);
    // a miss (no key yet) or a failure is not kept: the next call reads again
    loading.then(
      (k) => k === undefined && this.#cache.get(id) === loading && this.#cache.delete(id),
      () => this.#cache.get(id) === loading && this.#cache.delete(id),
    );
    while (this.#cache.size > this.#max) {
      const oldest = this.#cache.keys().next().value;
      if (oldest === undefined) break;
      this.#cache.delete(oldest);
    }
    return loading;
  }

  async #load(tenant: string, stream: string, create: boolean): Promise<StreamKeyset | undefined> {
    const key = streamKeyKey(tenant, stream);
    let item = await this.records.get(key);
    if (!item && create) {
      const keyId = this.#newKeyId();
      const { wrapped } = await this.wrapper.generate({ tenant, stream, keyId });
      const record: Item = {
        ...key,
        v: RECORD_VERSION,
        keyId,
        wrapper: this.wrapper.id,
        wrapped: wrapped.toString('base64'),
      };
      try {
        await this.records.put(record, { conditions: [{ op: 'notExists' }] });
        item = record;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        item = (err.current as Item | undefined) ?? (await this.records.get(key));
        if (!item) throw err;
      }
    }
    return item ? this.#open(tenant, stream, item) : undefined;
  }

  async #open(tenant: string, stream: string, item: Item): Promise<StreamKeyset> {
    const { keyId, wrapped, v } = item;
    const what = `the key of stream ${stream}`;
    if (v !== RECORD_VERSION || typeof keyId !== 'string' || typeof wrapped !== 'string') {
      throw new ContentSealedError(what, { cause: new InvalidFormatError('bad key record') });
    }
    let secret: Buffer;
    try {
      secret = await this.wrapper.unwrap({ tenant, stream, keyId }, Buffer.from(wrapped, 'base64'));
    } catch (err) {
      throw new ContentSealedError(what, { cause: err });
    }
    const keys = deriveStreamKeys(secret, { tenant, stream, keyId });
    secret.fill(0);
    return {
      keyId,
      keys,
      segment: {
        keyId,
        commit: keys.commit,
        content: (version) => (version === 0 ? keys.content : undefined),
        writeVersion: 0,
      },
    };
  }
}
