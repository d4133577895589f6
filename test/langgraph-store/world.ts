import { pino } from 'pino';
import { HefestoClient } from '../../packages/client/src/index.js';
import { HefestoStore, type HefestoStoreOptions } from '../../packages/langgraph/src/index.js';
import { Compactor, type CompactorOptions } from '../../shared/compaction/compactor.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import type { StoreFactory, StorePair } from '../support/stores.js';

/**
 * The HTTP API in this process over one store pair (memory, local or the AWS emulators), and
 * HefestoStores whose client sends its requests to it (`app.request`, no socket), one clock
 * for both (`advance`), each request counted (`sent`, as `METHOD /path?query`), replies that
 * can be lost (`loseReplies`), and a request that can be held before the server sees it
 * (`holdNext`), to order the replies of two calls in flight.
 */

export const ROOT_KEY = 'root-key-for-store-tests-0123456789abcdef';

export interface StoreWorld {
  /** A store on the root key's tenant (`default`), or on `apiKey`'s. */
  store(options?: Partial<HefestoStoreOptions> & { apiKey?: string }): HefestoStore;
  /** A key of its own tenant (write scope), for a second tenant's store. */
  tenantKey(tenant: string): Promise<string>;
  /** The scheduled compactor over the same stores and clock, with the ledger's checkpoints. */
  compactor(options?: Partial<CompactorOptions>): Compactor;
  /** Every request any store of this world sent, in order. */
  sent: string[];
  /** Loses the reply of the next `n` POSTs of any store, after the server answered them. */
  loseReplies(n: number): void;
  /**
   * Holds the next request whose `METHOD /path?query` passes `match` before the server answers
   * it: `reached` once it is held, `release()` lets it on.
   */
  holdNext(match: (request: string) => boolean): { reached: Promise<void>; release(): void };
  /** The server's records (for tampering with side records); the root key's tenant is `default`. */
  records: RecordStore;
  objects: ObjectStore;
  /** The server's ledger (its checkpoints, to order a compactor's commit against a client's). */
  ledger: Ledger;
  now(): number;
  advance(ms: number): void;
  close(): Promise<void>;
}

export const startStoreWorld = async (factory: StoreFactory): Promise<StoreWorld> => {
  let now = Date.now();
  const clock: Clock = { now: () => now };
  const stores: StorePair = await factory.make(clock);
  const ledger = new Ledger(
    { objects: stores.objects, records: stores.records, clock },
    { signing: new KeyRing(new FakeSigner('store')) },
  );
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT_KEY });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const sent: string[] = [];
  let lose = 0;
  const holds: Array<{ match: (r: string) => boolean; reach(): void; gate: Promise<void> }> = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const request = `${init?.method ?? 'GET'} ${url.pathname}${url.search}`;
    sent.push(request);
    const held = holds.findIndex((h) => h.match(request));
    if (held >= 0) {
      const [hold] = holds.splice(held, 1);
      hold?.reach();
      await hold?.gate;
    }
    const res = await app.request(String(input), init);
    if (lose > 0 && init?.method === 'POST') {
      lose--;
      await res.arrayBuffer();
      throw new TypeError('fetch failed: the reply was lost');
    }
    return res;
  }) as typeof globalThis.fetch;
  let compactors = 0;
  return {
    tenantKey: async (tenant) => {
      const root = await keys.authenticate(ROOT_KEY);
      return (await keys.create(root, { tenant, scopes: ['read', 'write'] })).key;
    },
    compactor: (options = {}) =>
      new Compactor({
        objects: stores.objects,
        records: stores.records,
        clock,
        ids: { newId: () => `compactor-${++compactors}` },
        states: ledger.states,
        checkpoints: ledger.checkpoints,
        graceMs: 10_000,
        ...options,
      }),
    store: ({ apiKey = ROOT_KEY, ...options } = {}) =>
      new HefestoStore({
        client: new HefestoClient({
          baseUrl: 'http://hefesto.test',
          apiKey,
          fetch,
          retry: { maxAttempts: 4, baseDelayMs: 1 },
          sleep: async () => {},
        }),
        clock,
        ...options,
      }),
    sent,
    loseReplies: (n) => {
      lose = n;
    },
    holdNext: (match) => {
      let reach = () => {};
      let release = () => {};
      const reached = new Promise<void>((r) => {
        reach = r;
      });
      const gate = new Promise<void>((r) => {
        release = r;
      });
      holds.push({ match, reach, gate });
      return { reached, release };
    },
    records: stores.records,
    objects: stores.objects,
    ledger,
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    close: () => stores.cleanup(),
  };
};
