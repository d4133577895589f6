import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { HefestoClient } from '../packages/client/src/index.js';
import { HefestoStore } from '../packages/langgraph/src/index.js';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import { createApp } from '../shared/http/app.js';
import { KeyService } from '../shared/keys/keys.js';
import { Ledger } from '../shared/ledger/ledger.js';
import { systemClock } from '../shared/ports/clock.js';
import { type Counts, countingAwsApp } from './aws-counting.js';
import { printTable } from './harness.js';

/**
 * Requests and storage operations per HefestoStore call (issue 27; docs/langgraph.md, "The
 * store"): the API in process on the embedded stores (files + SQLite: port calls counted) and
 * on S3 + DynamoDB (the emulators: SDK commands counted, run inside scripts/with-aws.sh).
 * A namespace of ITEMS items, and SPACES namespaces under `["users"]`; each call made once.
 * Counts, not times: `npx tsx bench/store-ops.ts`.
 */

const ROOT = 'bench-root-key-0123456789abcdef0123';
const ITEMS = 20;
const SPACES = 10;

const countingProxy = <T extends object>(target: T, name: string, counts: Counts): T =>
  new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        counts[`${name} ${prop}`] = (counts[`${name} ${prop}`] ?? 0) + 1;
        return value.apply(obj, args);
      };
    },
  });

const localApp = () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-store-ops-'));
  const counts: Counts = {};
  const rawObjects = new LocalObjectStore({ dir });
  const rawRecords = new LocalRecordStore({
    path: join(dir, 'records.sqlite'),
    clock: systemClock,
  });
  const objects = countingProxy(rawObjects, 'objects', counts);
  const records = countingProxy(rawRecords, 'records', counts);
  const ledger = new Ledger({ objects, records, clock: systemClock });
  const keys = new KeyService({ records: rawRecords, clock: systemClock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock: systemClock });
  return {
    app,
    counts,
    cleanup: async () => {
      rawRecords.close();
      rawObjects.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

const measure = async (backend: {
  app: { fetch: (r: Request) => Response | Promise<Response> };
  counts: Counts;
}) => {
  let requests = 0;
  const fetchIn = (async (input: string | URL | Request, init?: RequestInit) => {
    requests++;
    return backend.app.fetch(new Request(input, init));
  }) as typeof fetch;
  const storeOf = (options: { ttl?: { defaultTtl: number } } = {}) =>
    new HefestoStore({
      client: new HefestoClient({ baseUrl: 'http://in-process', apiKey: ROOT, fetch: fetchIn }),
      ...options,
    });
  const store = storeOf();
  const rows: Array<Record<string, string | number>> = [];
  const one = async (call: string, run: () => Promise<unknown>) => {
    for (const k of Object.keys(backend.counts)) delete backend.counts[k];
    requests = 0;
    await run();
    const ops = Object.entries(backend.counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    const total = Object.values(backend.counts).reduce((a, b) => a + b, 0);
    rows.push({ call, requests, 'storage ops': total, which: ops });
  };
  const doc = (i: number) => ({ text: `memory ${i}`, n: i });
  await one('put, a new namespace (first of the store)', () => store.put(['docs'], 'k0', doc(0)));
  await one('put, a new namespace (directory held)', () => store.put(['more'], 'k0', doc(0)));
  for (let i = 1; i < ITEMS - 1; i++) await store.put(['docs'], `k${i}`, doc(i));
  await one(`put, the namespace held (${ITEMS} items)`, () =>
    store.put(['docs'], `k${ITEMS - 1}`, doc(ITEMS - 1)),
  );
  await one('put, a new worker (namespace not held)', () => storeOf().put(['docs'], 'k1', doc(1)));
  await one('put, after another worker wrote (lost race, deltas, again)', () =>
    store.put(['docs'], 'k2', doc(2)),
  );
  await one('get (a path read)', () => store.get(['docs'], 'k3'));
  await one('delete, the namespace held', () => store.delete(['docs'], 'k4'));
  await one(`search one namespace, held (unchanged)`, () => store.search(['docs'], { limit: 5 }));
  await one('search one namespace, a new worker', () => storeOf().search(['docs'], { limit: 5 }));
  for (let i = 0; i < SPACES; i++) await store.put(['users', `u${i}`], 'prefs', { i });
  await one(`search ${SPACES} namespaces, held`, () => store.search(['users']));
  await one(`search ${SPACES} namespaces, a new worker`, () => storeOf().search(['users']));
  await one(`listNamespaces (${SPACES + 2} namespaces)`, () => storeOf().listNamespaces());
  const ttl = storeOf({ ttl: { defaultTtl: 60 } });
  await ttl.put(['ttl'], 'k', { n: 1 });
  await one('get with ttl refresh, namespace held', () => ttl.get(['ttl'], 'k'));
  return rows;
};

const local = localApp();
try {
  printTable(
    'HefestoStore per call: embedded stores (files + SQLite), port calls',
    await measure(local),
  );
} finally {
  await local.cleanup();
}
const aws = await countingAwsApp(ROOT);
if (!aws) console.log('\n(AWS: no emulator endpoints; run inside scripts/with-aws.sh)');
else {
  try {
    printTable(
      'HefestoStore per call: S3 + DynamoDB (emulators), SDK commands',
      await measure(aws),
    );
  } finally {
    await aws.cleanup();
  }
}
