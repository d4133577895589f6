import type { SignedTreeHead } from '../domain/signed-head.js';
import { checkConsistency } from './proofs.js';

/**
 * Where a client keeps the last signed tree head it verified, per (base URL, tenant, stream).
 * It must outlive the process: a head trusted only in memory is forgotten by a restart, and
 * the server could then rewrite everything the client saw before it. The default is a file
 * (`FileTrustStore`); any store that keeps what `put` gave it will do.
 */

/**
 * Whose head: the service (base URL), the tenant and the stream.
 *
 * @example
 * ```ts
 * const key: TrustKey = { baseUrl: 'http://localhost:8787', tenant: 'acme', stream: 'run-1' };
 * ```
 */
export interface TrustKey {
  baseUrl: string;
  tenant: string;
  stream: string;
}

/**
 * @example
 * ```ts
 * const store: TrustStore = new FileTrustStore(defaultTrustStorePath());
 * const trusted = await store.get({ baseUrl, tenant: 'acme', stream: 'run-1' });
 * ```
 */
export interface TrustStore {
  /** Where the heads are kept, for messages (a file's path); absent: in memory. */
  readonly location?: string;
  get(key: TrustKey): Promise<SignedTreeHead | undefined>;
  /**
   * Records a verified head. Never moves back: when a larger tree is stored already (another
   * process verified further), the stored one stays.
   */
  put(key: TrustKey, head: SignedTreeHead): Promise<void>;
}

/**
 * The store's id of a key; base URLs compare without trailing slashes.
 *
 * @example
 * ```ts
 * trustKeyId({ baseUrl: 'http://h/', tenant: 'acme', stream: 'run-1' }); // '["http://h","acme","run-1"]'
 * ```
 */
export const trustKeyId = (key: TrustKey): string =>
  JSON.stringify([key.baseUrl.replace(/\/+$/, ''), key.tenant, key.stream]);

/**
 * A trust store in memory: for tests, and for processes that get their trusted heads from
 * elsewhere on each start.
 *
 * @example
 * ```ts
 * const store = new MemoryTrustStore();
 * await store.put(key, head);
 * ```
 */
export class MemoryTrustStore implements TrustStore {
  readonly #heads = new Map<string, SignedTreeHead>();

  async get(key: TrustKey): Promise<SignedTreeHead | undefined> {
    return this.#heads.get(trustKeyId(key));
  }

  async put(key: TrustKey, head: SignedTreeHead): Promise<void> {
    const id = trustKeyId(key);
    const stored = this.#heads.get(id);
    if (stored === undefined || head.treeSize >= stored.treeSize) this.#heads.set(id, head);
  }
}

/**
 * Moves a stream's trusted head forward, one verification at a time per stream (so two reads
 * in flight cannot both pass against the same old head with heads that contradict each other).
 *
 * @example
 * ```ts
 * const trust = new TrustedHeads(new FileTrustStore(path));
 * // head: a receipt already checked with verifyReceipt
 * await trust.advance(key, head, (from, to) => fetchJson(`.../proofs/consistency?from=${from}&to=${to}`));
 * ```
 */
export class TrustedHeads {
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(readonly store: TrustStore) {}

  /**
   * Checks `head` (signature already verified) against the trusted head of `key`, fetching a
   * consistency proof when their sizes differ, and records it when it is larger. The first
   * head seen for a stream is trusted on first use. Throws `TamperedHistoryError` on a rewrite
   * or truncation; the trusted head then stays as it was.
   *
   * A head that says what the stream is *now* (`GET .../tree-head`, a verified read) must not
   * be smaller than the trusted one: that is a truncation. A `receipt` is what the stream was
   * when an append finished, and may arrive after a larger head was trusted (appends and reads
   * in flight together): it must then be a prefix of the trusted tree.
   */
  advance(
    key: TrustKey,
    head: SignedTreeHead,
    fetchConsistency: (from: number, to: number) => Promise<unknown>,
    options: { receipt?: boolean } = {},
  ): Promise<SignedTreeHead> {
    if (head.tenant !== key.tenant || head.streamId !== key.stream) {
      return Promise.reject(new Error('the head is for another stream than the key'));
    }
    const id = trustKeyId(key);
    const run = async () => {
      const trusted = await this.store.get(key);
      if (trusted !== undefined && options.receipt && head.treeSize < trusted.treeSize) {
        checkConsistency(head, trusted, await fetchConsistency(head.treeSize, trusted.treeSize));
        return trusted;
      }
      if (trusted !== undefined) {
        const proof =
          head.treeSize > trusted.treeSize
            ? await fetchConsistency(trusted.treeSize, head.treeSize)
            : undefined;
        checkConsistency(trusted, head, proof);
        if (head.treeSize === trusted.treeSize) return trusted;
      }
      await this.store.put(key, head);
      return head;
    };
    const next = (this.#queues.get(id) ?? Promise.resolve()).then(run, run);
    const tail = next.catch(() => undefined);
    this.#queues.set(id, tail);
    void tail.then(() => {
      if (this.#queues.get(id) === tail) this.#queues.delete(id);
    });
    return next;
  }
}
