import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { HefestoClient } from '../packages/client/src/index.js';
import { HefestoSaver } from '../packages/langgraph/src/index.js';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import { createApp } from '../shared/http/app.js';
import { KeyService } from '../shared/keys/keys.js';
import { Ledger } from '../shared/ledger/ledger.js';
import { systemClock } from '../shared/ports/clock.js';
import { type Counts, countingAwsApp } from './aws-counting.js';
import { printTable } from './harness.js';

/**
 * Requests and storage operations per HefestoSaver call (issue 24; docs/langgraph.md): the
 * API in process on the embedded stores (files + SQLite: port calls counted) and on S3 +
 * DynamoDB (the emulators: SDK commands counted, run inside scripts/with-aws.sh), each call
 * made once on a thread of DEPTH checkpoints (a messages channel grown by one per put, one
 * task's write per checkpoint), the thread's state warm in the server as in a run.
 * Counts, not times: `npx tsx bench/saver-ops.ts`.
 */

const ROOT = 'bench-root-key-0123456789abcdef0123';
const DEPTH = 30;
const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };
const at = (id: string) => ({ configurable: { ...thread.configurable, checkpoint_id: id } });
const meta = { source: 'loop' as const, step: 0, parents: {} };
const idOf = (i: number) => `id-${String(i).padStart(4, '0')}`;
const ckpt = (id: string, n: number, values = true) => ({
  v: 4,
  id,
  ts: new Date().toISOString(),
  channel_values: values ? { messages: Array.from({ length: n }, (_, i) => `message ${i}`) } : {},
  channel_versions: { messages: n },
  versions_seen: {},
});

/** Counts every method call on `target` into `counts` as `${name} ${method}`. */
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
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-saver-ops-'));
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
    /** Records by kind (the sk up to its first `#`): count and bytes (key + body). */
    recordKinds: () => {
      const db = new Database(join(dir, 'records.sqlite'), { readonly: true });
      try {
        return db
          .prepare(
            `SELECT CASE WHEN instr(sk, '#') > 0 THEN substr(sk, 1, instr(sk, '#')) ELSE sk END AS kind,
                    count(*) AS n, sum(length(pk) + length(sk) + length(body)) AS bytes
             FROM items WHERE pk LIKE 't#default#s#%' GROUP BY kind ORDER BY bytes DESC`,
          )
          .all() as Array<{ kind: string; n: number; bytes: number }>;
      } finally {
        db.close();
      }
    },
    cleanup: async () => {
      rawRecords.close();
      rawObjects.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

const measure = async (backend: {
  recordKinds?: () => Array<{ kind: string; n: number; bytes: number }>;
  app: { fetch: (r: Request) => Response | Promise<Response> };
  counts: Counts;
}) => {
  let requests = 0;
  const fetchIn = (async (input: string | URL | Request, init?: RequestInit) => {
    requests++;
    return backend.app.fetch(new Request(input, init));
  }) as typeof fetch;
  const saverOf = () =>
    new HefestoSaver({
      client: new HefestoClient({ baseUrl: 'http://in-process', apiKey: ROOT, fetch: fetchIn }),
    });
  const saver = saverOf();
  let config = await saver.put(thread, ckpt(idOf(0), 1), meta, { messages: 1 });
  for (let i = 1; i < DEPTH; i++) {
    await saver.putWrites(config, [['messages', `w${i}`]], `task-${i}`);
    config = await saver.put(config, ckpt(idOf(i), i + 1, i % 10 === 0), meta, { messages: i + 1 });
  }
  const kinds = backend.recordKinds?.();
  if (kinds) {
    printTable(
      `Records of a thread of ${DEPTH} checkpoints (one write each), by kind: fixed costs per checkpoint`,
      kinds.map((k) => ({
        kind: k.kind,
        records: k.n,
        bytes: k.bytes,
        'bytes per checkpoint': (k.bytes / DEPTH).toFixed(0),
      })),
    );
  }
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
  await one('getTuple, unchanged (the tip this saver holds)', () => saver.getTuple(thread));
  await one('getTuple, cold (a new worker: the state whole)', () => saverOf().getTuple(thread));
  const mover = saverOf();
  await mover.getTuple(thread);
  const last = idOf(DEPTH);
  await one('put, linear (one message appended)', () =>
    mover.put(config, ckpt(last, DEPTH + 1), meta, { messages: DEPTH + 1 }),
  );
  await one('getTuple, moved on by another worker (deltas since)', () => saver.getTuple(thread));
  await one('putWrites (one task, one write)', () =>
    mover.putWrites(at(last), [['messages', 'x']], 'task-x'),
  );
  await one('list, a page of 10', async () => {
    for await (const _ of saverOf().list(thread, { limit: 10 })) {
      // the page
    }
  });
  await one(`getDeltaChannelHistory (${DEPTH} deep, seed 10 back)`, () =>
    saverOf().getDeltaChannelHistory({ config: thread, channels: ['messages'] }),
  );
  await one('put, branching from an older checkpoint', () =>
    mover.put(at(idOf(3)), ckpt(idOf(DEPTH + 1), 5), meta, { messages: 5 }),
  );
  return rows;
};

const local = localApp();
try {
  printTable(
    'HefestoSaver per call: embedded stores (files + SQLite), port calls',
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
      'HefestoSaver per call: S3 + DynamoDB (emulators), SDK commands',
      await measure(aws),
    );
  } finally {
    await aws.cleanup();
  }
}
