import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { STATIC_DIR } from '../../functions/wiring/embedded.js';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import type { HttpLimits } from '../../shared/domain/limits.js';
import { createApp } from '../../shared/http/app.js';
import { staticDirAssets } from '../../shared/http/static-assets.js';
import { KeyService, type Scope } from '../../shared/keys/keys.js';
import { Ledger, type LedgerSettings } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';

/**
 * The HTTP API in process (`app.request()`), over memory or local (files + SQLite) stores,
 * with a settable clock and the log lines captured.
 */

export const ROOT_KEY = 'root-key-for-tests-0123456789abcdef';
export const T0 = 1_700_000_000_000;

interface Stores {
  objects: ObjectStore;
  records: RecordStore;
  /** The data directory of file-backed stores. */
  dir?: string;
  close(): void;
}

export interface StoreFactory {
  name: string;
  create(clock: Clock): Stores;
}

export const STORE_FACTORIES: StoreFactory[] = [
  {
    name: 'memory',
    create: (clock) => ({
      objects: new MemoryObjectStore(),
      records: new MemoryRecordStore({ clock }),
      close: () => {},
    }),
  },
  {
    name: 'local',
    create: (clock) => {
      const dir = mkdtempSync(join(tmpdir(), 'hefesto-http-'));
      // As the embedded server opens them: one file (local-stores.ts).
      const { objects, records } = openLocalStores(dir, { clock });
      return {
        objects,
        records,
        dir,
        close: () => {
          records.close();
          objects.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

export interface HarnessOptions {
  limits?: Partial<HttpLimits>;
  ledger?: LedgerSettings;
  /** Streams created sealed at rest (a keyring over in-process tenant KEKs). */
  sealed?: boolean;
  /** Wraps the object store the ledger sees (fault injection). */
  wrapObjects?: (objects: ObjectStore) => ObjectStore;
}

export interface RequestOptions {
  method?: string;
  key?: string;
  /** Serialized as JSON unless it is a string. */
  body?: unknown;
  headers?: Record<string, string>;
}

export type Harness = ReturnType<typeof createHarness>;

export const createHarness = (factory: StoreFactory, options: HarnessOptions = {}) => {
  let now = T0;
  const clock: Clock = { now: () => now };
  const stores = factory.create(clock);
  const logs: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => logs.push(line) });
  const objects = options.wrapObjects?.(stores.objects) ?? stores.objects;
  const keyring = options.sealed
    ? new StreamKeyring(stores.records, new MemoryKeyWrapper())
    : undefined;
  const ledger = new Ledger({ objects, records: stores.records, clock, keyring }, options.ledger);
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT_KEY });
  const assets = staticDirAssets(STATIC_DIR);
  const app = createApp({ ledger, keys, logger, clock, limits: options.limits, assets });

  const request = (path: string, init: RequestOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`;
    let body: string | undefined;
    if (init.body !== undefined) {
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    return Promise.resolve(
      app.request(path, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body }),
    );
  };

  /** A new key for `tenant`, made by the root key over HTTP. */
  const newKey = async (tenant: string, scopes: Scope[] = ['read', 'write']): Promise<string> => {
    const res = await request('/v1/keys', { key: ROOT_KEY, body: { tenant, scopes } });
    if (res.status !== 201) throw new Error(`key creation failed: ${res.status}`);
    return ((await res.json()) as { key: string }).key;
  };

  const append = (
    key: string,
    stream: string,
    events: Array<{ type: string; payload: unknown }>,
    extra: { expectedSeq?: number; idempotencyKey?: string } = {},
  ) =>
    request(`/v1/streams/${stream}/events`, {
      key,
      body: {
        events,
        ...(extra.expectedSeq === undefined ? {} : { expectedSeq: extra.expectedSeq }),
      },
      headers: extra.idempotencyKey ? { 'idempotency-key': extra.idempotencyKey } : {},
    });

  /** The head seq of a stream as the API reports it, or undefined on 404. */
  const headSeq = async (key: string, stream: string): Promise<number | undefined> => {
    const res = await request(`/v1/streams/${stream}`, { key });
    if (res.status === 404) return undefined;
    return ((await res.json()) as { seq: number }).seq;
  };

  return {
    app,
    ledger,
    keys,
    objects: stores.objects,
    records: stores.records,
    dataDir: stores.dir,
    logs,
    request,
    newKey,
    append,
    headSeq,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    close: stores.close,
  };
};

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  issues: Array<{ in: string; path: string; message: string }>;
}

/** A response's JSON body, typed by the test that knows the route. */
export const readJson = async <T>(res: Response | Promise<Response>): Promise<T> =>
  (await (await res).json()) as T;

export const events = (n: number, type = 'observation') =>
  Array.from({ length: n }, (_, i) => ({ type, payload: { turn: i, text: `said ${i}` } }));
