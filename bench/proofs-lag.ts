import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MemoryObjectStore } from '../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../shared/adapters/memory/memory-record-store.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../shared/ports/signer.js';
import { Appender } from '../shared/services/append.js';
import { Reader } from '../shared/services/reader.js';
import { writeTreeTiles } from '../shared/services/tree-tiles.js';
import { ROOT, startPinnedServer } from './embedded-load.js';
import { printTable } from './harness.js';

/**
 * Issue 21 item 4: proofs whatever the tiles' lag, and the compactor's tiling rate.
 *
 *   A. 20 concurrent proofs (10 inclusion, 10 consistency to the head) on a 100k-event stream
 *      the compactor never tiled (embedded server, compactor off), 5 rounds: wall time per
 *      round, per-proof latency, the server's peak RSS, and GET /healthz p99 probed every 2 ms
 *      meanwhile (budget: under 100 ms). Before this change each proof read every untiled
 *      leaf (0.9 s each, /healthz 14 s); now the index records' subtree hashes answer it.
 *   B. The compactor's tree step (tree-tiles.ts) over an untiled stream: events tiled per
 *      second, on memory, on the embedded stores and on the S3/DynamoDB emulators when they
 *      run (the stream written in batches of 10, and of 1: one segment per event). To keep up with a stream written at 1,000
 *      events/s, a pass every 60 s (HEFESTO_COMPACT_INTERVAL_MS) with its 50 s budget must
 *      tile at 1,200 events/s or more.
 *
 * `npx tsx bench/proofs-lag.ts` (BENCH_PROOFS_EVENTS to change the 100k; BENCH_PROOFS_TILES_ONLY=1
 * for B alone).
 */

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

const EVENTS = Number(process.env.BENCH_PROOFS_EVENTS ?? 100_000);
const PER_APPEND = 100;
/** Rounds of 20 concurrent proofs, one after the other (for enough /healthz samples). */
const ROUNDS = 5;

const peakRssMb = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
};

/** A request again when the connection was closed under it (a keep-alive race). */
const retrying = async (send: () => Promise<Response>): Promise<Response> => {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
};

const get = async (url: string) => {
  const res = await retrying(() => fetch(url, { headers: { authorization: `Bearer ${ROOT}` } }));
  const body = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body}`);
  return body;
};

const concurrentProofs = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-proofs-'));
  const server = await startPinnedServer(
    { HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT, HEFESTO_COMPACT_INTERVAL_MS: '0' },
    process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [],
  );
  server.child.once('exit', (code, signal) => {
    if (code !== 0)
      console.error(`server exited (${code ?? signal}):\n${server.output().slice(-4000)}`);
  });
  try {
    const stream = `${server.url}/v1/streams/hot`;
    const t0 = performance.now();
    for (let done = 0; done < EVENTS; done += PER_APPEND) {
      const events = Array.from({ length: PER_APPEND }, (_, i) => ({
        type: 'observation',
        payload: { i: done + i, text: 'x'.repeat(64) },
      }));
      const res = await retrying(() =>
        fetch(`${stream}/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${ROOT}`,
            'content-type': 'application/json',
            'idempotency-key': `bench-${done}`,
          },
          body: JSON.stringify({ events }),
        }),
      );
      await res.arrayBuffer();
      if (res.status !== 201) throw new Error(`append answered ${res.status}`);
    }
    const writeS = (performance.now() - t0) / 1000;
    // Warm-up (the server loads and compiles the proof routes' code on first use).
    await get(`${stream}/proofs/inclusion?seq=1`);
    await get(`${stream}/proofs/consistency?from=1`);
    const rssBefore = peakRssMb(server.pid);
    // /healthz every 2 ms from this process while the proofs run (a probe process of its own
    // takes longer to start on a loaded machine than the proofs take).
    const health: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const s = performance.now();
        await (await retrying(() => fetch(`${server.url}/healthz`))).arrayBuffer();
        health.push(performance.now() - s);
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const latencies: number[] = [];
    const walls: number[] = [];
    const cpu0 = server.cpuMs();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const start = performance.now();
        await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const s = performance.now();
            const at = 1 + Math.floor(((i + (round + 0.5) / ROUNDS) / 20) * (EVENTS - 1));
            await get(
              i % 2 === 0
                ? `${stream}/proofs/inclusion?seq=${at}`
                : `${stream}/proofs/consistency?from=${at}`,
            );
            latencies.push(performance.now() - s);
          }),
        );
        walls.push(performance.now() - start);
      }
    } finally {
      probing = false;
      await probe.catch(() => undefined);
    }
    const cpuPerProof = (server.cpuMs() - cpu0) / (ROUNDS * 20);
    health.sort((a, b) => a - b);
    walls.sort((a, b) => a - b);
    latencies.sort((a, b) => a - b);
    printTable(
      `${ROUNDS} rounds of 20 concurrent proofs on a ${EVENTS.toLocaleString('en')}-event stream, nothing tiled (embedded server, compactor off; written in ${writeS.toFixed(0)} s, batches of ${PER_APPEND})`,
      [
        {
          'wall ms per 20 proofs (median of rounds)': quantile(walls, 0.5).toFixed(0),
          'proof p50 ms': quantile(latencies, 0.5).toFixed(1),
          'server CPU ms per proof (load-independent)': cpuPerProof.toFixed(1),
          'proof max ms': (latencies.at(-1) ?? Number.NaN).toFixed(1),
          'server peak RSS MB (after writing / after proofs)': `${rssBefore.toFixed(0)} / ${peakRssMb(server.pid).toFixed(0)}`,
          '/healthz probes': health.length,
          '/healthz p99 ms (budget 100)': quantile(health, 0.99).toFixed(1),
          '/healthz max ms': (health.at(-1) ?? Number.NaN).toFixed(1),
        },
      ],
    );
  } catch (err) {
    console.error(server.output().slice(-4000));
    throw err;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
};

interface Backend {
  name: string;
  make(): Promise<{ objects: ObjectStore; records: RecordStore; close(): Promise<void> }>;
}

const backends = async (): Promise<Backend[]> => {
  const list: Backend[] = [
    {
      name: 'memory',
      make: async () => {
        let now = Date.now();
        const clock = { now: () => now++ };
        return {
          objects: new MemoryObjectStore(),
          records: new MemoryRecordStore({ clock }),
          close: async () => {},
        };
      },
    },
    {
      name: 'local (embedded)',
      make: async () => {
        const { LocalObjectStore } = await import('../shared/adapters/local/local-object-store.js');
        const { LocalRecordStore } = await import('../shared/adapters/local/local-record-store.js');
        const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-tiles-'));
        const objects = new LocalObjectStore({ dir: join(dir, 'objects') });
        const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
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
      make: async () => {
        const pair = await aws.awsStores.make();
        return { objects: pair.objects, records: pair.records, close: () => pair.cleanup() };
      },
    });
  }
  return list;
};

const tilingRate = async () => {
  const rows = [];
  for (const backend of await backends()) {
    const runs: Array<[number, number]> =
      backend.name === 'memory'
        ? [
            [50_000, 10],
            [10_000, 1],
          ]
        : [
            [20_000, 10],
            [5_000, 1],
          ];
    for (const [n, per] of runs) {
      const stores = await backend.make();
      try {
        let now = Date.now();
        const clock = { now: () => now++ };
        const ring = new KeyRing(new FakeSigner('bench'));
        const appender = new Appender({ ...stores, clock, signer: ring.current });
        for (let done = 0; done < n; done += per) {
          await appender.append({
            tenant: 'bench',
            stream: 'lag',
            events: Array.from({ length: per }, (_, i) => ({
              type: 'observation',
              payload: { i: done + i, text: 'x'.repeat(64) },
            })),
          });
        }
        const reader = new Reader(stores);
        const t0 = performance.now();
        const result = await writeTreeTiles(
          { ...stores, reader },
          { tenant: 'bench', stream: 'lag' },
        );
        const seconds = (performance.now() - t0) / 1000;
        if (result.size !== n) throw new Error(`tiled ${result.size} of ${n}`);
        const rate = n / seconds;
        rows.push({
          stores: backend.name,
          'untiled events': n,
          'events per segment': per,
          'tiling s': seconds.toFixed(2),
          'events/s tiled': rate.toFixed(0),
          'keeps up with 1,000 events/s (>= 1,200/s in a 50 s pass per 60 s)':
            rate >= 1200 ? 'yes' : 'no',
        });
      } finally {
        await stores.close();
      }
    }
  }
  printTable("The compactor's tree step over an untiled stream (tree-tiles.ts)", rows);
};

export const runProofsLagBench = async (): Promise<void> => {
  if (process.env.BENCH_PROOFS_TILES_ONLY !== '1') await concurrentProofs();
  await tilingRate();
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runProofsLagBench();
