import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, startPinnedServer } from './embedded-load.js';
import { printTable } from './harness.js';
import { sustainedTiling, tilingRates } from './tiles-keep-up.js';

/**
 * Issue 21 item 4: proofs whatever the tiles' lag, and the compactor's tiling rate.
 *
 *   A. 20 concurrent proofs (10 inclusion, 10 consistency to the head) on a 100k-event stream
 *      the compactor never tiled (embedded server, compactor off), 20 rounds: wall time per
 *      round, per-proof latency, the server's peak RSS, and GET /healthz p99 probed every 2 ms
 *      meanwhile (budget: under 100 ms). Before the untiled tail was bounded each proof read
 *      every untiled leaf (0.9 s each, /healthz 14 s); the index records' subtree hashes
 *      answer it now. The embedded stores answer at once (SQLite), so 20 proofs then ran as
 *      one stretch of the event loop (/healthz ~290 ms on a loaded machine); now at most 4
 *      compute at once, each giving the loop a turn before each batch of hashes (proofs.ts).
 *   B, C. The compactor's tiling rate over an untiled stream, and against a writer at 1,000
 *      events/s for a few minutes (bench/tiles-keep-up.ts). To keep up with such a stream, a
 *      pass every 60 s (HEFESTO_COMPACT_INTERVAL_MS) with its 50 s budget must tile at 1,200
 *      events/s or more.
 *
 * `npx tsx bench/proofs-lag.ts` (BENCH_PROOFS_EVENTS to change the 100k; BENCH_PROOFS_PARTS, a
 * list of proofs,rates,sustain, for some of them; with the emulators: `bash scripts/with-aws.sh`).
 */

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

const EVENTS = Number(process.env.BENCH_PROOFS_EVENTS ?? 100_000);
const PER_APPEND = 100;
/** Rounds of 20 concurrent proofs, one after the other (for enough /healthz samples). */
const ROUNDS = Number(process.env.BENCH_PROOFS_ROUNDS ?? 20);

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

export const runProofsLagBench = async (): Promise<void> => {
  const parts = (process.env.BENCH_PROOFS_PARTS ?? 'proofs,rates,sustain').split(',');
  console.log(
    `load average at start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  if (parts.includes('proofs')) await concurrentProofs();
  if (parts.includes('rates')) await tilingRates();
  if (parts.includes('sustain')) await sustainedTiling();
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runProofsLagBench();
