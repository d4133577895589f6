import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryObjectStore } from '../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../shared/adapters/memory/memory-record-store.js';
import { Reader } from '../shared/chain/reader.js';
import { headKey, tilesKey } from '../shared/chain/storage-keys.js';
import { Appender } from '../shared/commit/append.js';
import type { CompactStep } from '../shared/compaction/compact-types.js';
import { Compactor } from '../shared/compaction/compactor.js';
import { Ledger } from '../shared/ledger/ledger.js';
import type { Clock } from '../shared/ports/clock.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../shared/ports/signer.js';
import { writeTreeTiles } from '../shared/proofs/tree-tiles.js';
import { printTable } from './harness.js';

/**
 * Issue 21 item 4: does the compactor's tiling keep up with a stream written at 1,000 events/s?
 *
 *   B. The tree step (tree-tiles.ts) over an untiled stream written in batches of 1, 2, 10 and
 *      100 events (one segment each): events tiled per second, CPU per leaf, and the storage
 *      requests per 1,000 leaves (segment GETs, index queries, tile PUTs, record writes), on
 *      memory, on the embedded stores and on the S3/DynamoDB emulators when they run; beside
 *      it, the rate one writer appending batch after batch wrote that stream at (the tree step
 *      makes at most one GET per append, a writer one transaction and one PUT).
 *   C. Sustained: a writer appends at 1,000 events/s (batches of BENCH_SUSTAIN_BATCH, 50) for
 *      BENCH_SUSTAIN_S (240 s) while the real compactor visits the stream every
 *      BENCH_SUSTAIN_PASS_S (30 s) with a budget of 5/6 of that (production: 50 s every 60 s);
 *      per pass: the tiles' lag at its start and end, the leaves its tree step tiled and at
 *      what rate. The lag is bounded when every pass tiles at least the lag it started with.
 *      Writer and compactor share this process (one event loop): harder for both than a
 *      compactor function of its own.
 */

export interface BenchStores {
  objects: ObjectStore;
  records: RecordStore;
  close(): Promise<void>;
}

export interface Backend {
  name: string;
  make(clock: Clock): Promise<BenchStores>;
}

export const backends = async (): Promise<Backend[]> => {
  const list: Backend[] = [
    {
      name: 'memory',
      make: async (clock) => ({
        objects: new MemoryObjectStore(),
        records: new MemoryRecordStore({ clock }),
        close: async () => {},
      }),
    },
    {
      name: 'local (embedded)',
      make: async (clock) => {
        const { LocalObjectStore } = await import('../shared/adapters/local/local-object-store.js');
        const { LocalRecordStore } = await import('../shared/adapters/local/local-record-store.js');
        const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-tiles-'));
        const objects = new LocalObjectStore({ dir: join(dir, 'objects') });
        const records = new LocalRecordStore({ path: join(dir, 'records.sqlite'), clock });
        return {
          objects,
          records,
          close: async () => {
            objects.close();
            records.close();
            rmSync(dir, { recursive: true, force: true });
          },
        };
      },
    },
  ];
  const aws = await import('../test/support/stores.js');
  if (aws.awsStores.enabled) {
    list.push({
      name: 'S3 + DynamoDB emulators',
      make: async (clock) => {
        const pair = await aws.awsStores.make(clock);
        return { objects: pair.objects, records: pair.records, close: () => pair.cleanup() };
      },
    });
  }
  return list;
};

/** Counts the requests of the tree step by kind, through the real adapters. */
const counting = (stores: BenchStores) => {
  const n = { segmentGets: 0, otherGets: 0, indexQueries: 0, tilePuts: 0, recordWrites: 0 };
  const objects: ObjectStore = {
    get: (key) => {
      if (key.includes('/seg/')) n.segmentGets++;
      else n.otherGets++;
      return stores.objects.get(key);
    },
    head: (key) => stores.objects.head(key),
    list: (prefix, options) => stores.objects.list(prefix, options),
    putIfAbsent: (key, body) => {
      n.tilePuts++;
      return stores.objects.putIfAbsent(key, body);
    },
    putIfMatch: (key, body, etag) => stores.objects.putIfMatch(key, body, etag),
    delete: (key) => stores.objects.delete(key),
  };
  const records: RecordStore = {
    get: (key) => stores.records.get(key),
    put: (item, options) => stores.records.put(item, options),
    update: (key, update, options) => stores.records.update(key, update, options),
    delete: (key, options) => stores.records.delete(key, options),
    query: (pk, options) => {
      n.indexQueries++;
      return stores.records.query(pk, options);
    },
    transact: (ops) => {
      n.recordWrites++;
      return stores.records.transact(ops);
    },
  };
  return { objects, records, n };
};

const events = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    type: 'observation',
    payload: { i: from + i, text: 'x'.repeat(64) },
  }));

export const tilingRates = async (): Promise<void> => {
  const rows = [];
  for (const backend of await backends()) {
    const fast = backend.name === 'memory';
    const runs: Array<[number, number]> = [
      [fast ? 10_000 : 4_000, 1],
      [fast ? 10_000 : 4_000, 2],
      [fast ? 50_000 : 20_000, 10],
      [fast ? 100_000 : 40_000, 100],
    ];
    for (const [n, per] of runs) {
      let now = Date.now();
      const clock = { now: () => now++ };
      const stores = await backend.make(clock);
      try {
        const ring = new KeyRing(new FakeSigner('bench'));
        const appender = new Appender({ ...stores, clock, signer: ring.current });
        const w0 = performance.now();
        for (let done = 0; done < n; done += per) {
          await appender.append({ tenant: 'bench', stream: 'lag', events: events(done, per) });
        }
        const writeS = (performance.now() - w0) / 1000;
        const counted = counting(stores);
        const reader = new Reader(counted);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const result = await writeTreeTiles(
          { ...counted, reader },
          { tenant: 'bench', stream: 'lag', maxLeaves: n },
        );
        const seconds = (performance.now() - t0) / 1000;
        const cpu = process.cpuUsage(cpu0);
        if (result.size !== n) throw new Error(`tiled ${result.size} of ${n}`);
        const per1k = (x: number) => ((x * 1000) / n).toFixed(1);
        rows.push({
          stores: backend.name,
          'events per segment': per,
          'untiled events': n,
          'tiling s': seconds.toFixed(2),
          'events/s tiled': (n / seconds).toFixed(0),
          // One writer, one append after another: what one stream can be written at here.
          'events/s written (appends/s)': `${(n / writeS).toFixed(0)} (${(n / per / writeS).toFixed(0)})`,
          'CPU µs per leaf': ((cpu.user + cpu.system) / n).toFixed(1),
          'per 1k leaves: segment GETs / index queries / tile PUTs / record writes': [
            per1k(counted.n.segmentGets),
            per1k(counted.n.indexQueries),
            per1k(counted.n.tilePuts),
            per1k(counted.n.recordWrites),
          ].join(' / '),
        });
      } finally {
        await stores.close();
      }
    }
  }
  printTable("B. The compactor's tree step over an untiled stream (tree-tiles.ts)", rows);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

interface PassRow {
  at: number;
  lagBefore: number;
  tiled: number;
  tileS: number;
  visitS: number;
  lagAfter: number;
  merged: number;
}

const sustain = async (backend: Backend) => {
  const seconds = Number(process.env.BENCH_SUSTAIN_S ?? 240);
  const passS = Number(process.env.BENCH_SUSTAIN_PASS_S ?? 30);
  const per = Number(process.env.BENCH_SUSTAIN_BATCH ?? 50);
  const rate = 1000;
  const clock = { now: () => Date.now() };
  const stores = await backend.make(clock);
  const ring = new KeyRing(new FakeSigner('bench'));
  const ledger = new Ledger({ ...stores, clock }, { signing: ring });
  const tiledSize = async () => Number((await stores.records.get(tilesKey('t', 's')))?.size ?? 0);
  const headSeq = async () => Number((await stores.records.get(headKey('t', 's')))?.seq ?? 0);
  let written = 0;
  let writing = true;
  const t0 = Date.now();
  const writer = (async () => {
    while (writing) {
      // Paced at `rate`; behind schedule, the next batch goes at once.
      const due = t0 + (written / rate) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
      if (!writing) break;
      await ledger.appender.append({ tenant: 't', stream: 's', events: events(written, per) });
      written += per;
    }
  })();
  let step: { tilesAt?: number; leaseAt?: number } = {};
  let ids = 0;
  const compactor = new Compactor({
    ...stores,
    clock,
    ids: { newId: () => `bench-${++ids}` },
    states: ledger.states,
    maxRunMs: (passS * 1000 * 5) / 6,
    // The visit's own steps, timed (the hook is the compactor's crash-test seam; it only
    // records the time here).
    crash: (at: CompactStep) => {
      if (at === 'lease-acquired') step.leaseAt = Date.now();
      if (at === 'tiles-written') step.tilesAt = Date.now();
    },
  });
  const passes: PassRow[] = [];
  let maxLag = 0;
  try {
    for (let at = passS; at <= seconds; at += passS) {
      while (Date.now() - t0 < at * 1000) {
        maxLag = Math.max(maxLag, (await headSeq()) - (await tiledSize()));
        await sleep(1000);
      }
      const size = await tiledSize();
      const lagBefore = (await headSeq()) - size;
      step = {};
      const start = Date.now();
      const report = await compactor.compactStream('t', 's');
      const after = await tiledSize();
      const tileS = ((step.tilesAt ?? start) - (step.leaseAt ?? start)) / 1000;
      passes.push({
        at,
        lagBefore,
        tiled: after - size,
        tileS,
        visitS: (Date.now() - start) / 1000,
        lagAfter: (await headSeq()) - after,
        merged: report.segmentsMerged,
      });
      maxLag = Math.max(maxLag, lagBefore);
    }
  } finally {
    writing = false;
    await writer;
  }
  const wroteS = (Date.now() - t0) / 1000;
  await stores.close();
  return { passes, maxLag, written, wroteS, per, passS, seconds };
};

export const sustainedTiling = async (): Promise<void> => {
  const all = await backends();
  const wanted = process.env.BENCH_SUSTAIN_STORES?.split(',');
  const chosen = wanted
    ? all.filter((b) => wanted.some((w) => b.name.startsWith(w)))
    : [all.find((b) => b.name.startsWith('S3')) ?? (all[1] as Backend)];
  for (const backend of chosen) {
    const r = await sustain(backend);
    printTable(
      `C. ${backend.name}: a writer at 1,000 events/s (batches of ${r.per}; achieved ${(r.written / r.wroteS).toFixed(0)}/s over ${r.wroteS.toFixed(0)} s), the compactor's visit every ${r.passS} s`,
      r.passes.map((p) => ({
        'pass at s': p.at,
        'lag at start (events)': p.lagBefore,
        'leaves tiled': p.tiled,
        'tree step s': p.tileS.toFixed(2),
        'tiling events/s': p.tileS > 0 ? (p.tiled / p.tileS).toFixed(0) : '-',
        'visit s (tiles + merges + gc)': p.visitS.toFixed(2),
        'segments merged': p.merged,
        'lag at end': p.lagAfter,
      })),
    );
    const rates = r.passes.filter((p) => p.tileS > 0).map((p) => p.tiled / p.tileS);
    const bounded = r.passes.every((p) => p.tiled >= p.lagBefore);
    console.log(
      `median tiling rate ${median(rates).toFixed(0)} events/s; max lag ${r.maxLag} events; ` +
        `lag bounded (every pass tiled at least the lag it started with): ${bounded ? 'yes' : 'no'}\n`,
    );
  }
};
