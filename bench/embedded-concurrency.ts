import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type PinnedServer,
  pinSelf,
  processCpuMs,
  ROOT,
  startPinnedServer,
  startProbe,
  type ThreadCpu,
} from './embedded-load.js';
import { printTable } from './harness.js';

/**
 * The embedded server under concurrent agents (issue 16's budgets, ratios within one run):
 *   A. 16 clients on 16 streams vs 1 client, single-event appends:  rate ratio >= 3
 *   B. server CPU per single-event append vs per GET /healthz:       ratio <= 3
 *   C. 64 concurrent clients (own streams):                           p99 <= 10 x p50
 *   D. GET /healthz p99 while those 64 clients run:                   < 10 ms
 *   E. fsyncs per acknowledged append (counted in the local adapters), printed.
 * The server runs pinned to core 0, this load generator to the last core; both CPU figures
 * are printed. `BENCH_CPU_PROF=<dir>` runs the server under `node --cpu-prof`;
 * `BENCH_NODE_FLAGS` adds node flags to the server's command line.
 */

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

const EVENT = JSON.stringify({
  events: [{ type: 'observation', payload: { role: 'tool', text: 'x'.repeat(160) } }],
});

interface PhaseResult {
  requests: number;
  seconds: number;
  latencies: number[];
  serverCpuMs: number;
  serverSysMs: number;
  clientCpuMs: number;
  fsyncs?: number;
  loop?: { p50: number; p99: number; max: number };
  /** Server CPU ms by thread (event loop, durable writers, the rest), when stats are on. */
  threads?: ThreadCpu;
}

const appendOnce = async (url: string, stream: string, key: string) => {
  const res = await fetch(`${url}/v1/streams/${stream}/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ROOT}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: EVENT,
  });
  await res.arrayBuffer();
  if (res.status !== 201) throw new Error(`append answered ${res.status}`);
};

const healthzOnce = async (url: string) => {
  const res = await fetch(`${url}/healthz`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
};

/** Runs `clients` loops of `perClient` calls of `call(c, i)`; CPU and counters around it. */
const phase = async (
  server: PinnedServer,
  clients: number,
  perClient: number,
  call: (c: number, i: number) => Promise<void>,
  withStats: boolean,
): Promise<PhaseResult> => {
  const before = withStats ? await server.stats() : undefined;
  const tids = before?.tids ?? [];
  const threads0 = server.threadCpuMs(tids);
  const cpu0 = server.cpuSplitMs();
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let i = 0; i < perClient; i++) {
        const s = performance.now();
        await call(c, i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = server.cpuSplitMs();
  const threads1 = server.threadCpuMs(tids);
  const serverSysMs = cpu1[1] - cpu0[1];
  const serverCpuMs = cpu1[0] - cpu0[0] + serverSysMs;
  const used = process.cpuUsage(client0);
  const after = withStats ? await server.stats() : undefined;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    seconds,
    latencies,
    serverCpuMs,
    serverSysMs,
    clientCpuMs: (used.user + used.system) / 1000,
    ...(before && after
      ? {
          fsyncs: after.fsyncs - before.fsyncs,
          loop: after.loop,
          threads: {
            loop: threads1.loop - threads0.loop,
            writers: threads1.writers - threads0.writers,
            other: threads1.other - threads0.other,
          },
        }
      : {}),
  };
};

const row = (name: string, r: PhaseResult) => ({
  load: name,
  requests: r.requests,
  'requests/s': (r.requests / r.seconds).toFixed(0),
  'p50 ms': quantile(r.latencies, 0.5).toFixed(2),
  'p99 ms': quantile(r.latencies, 0.99).toFixed(2),
  'max ms': (r.latencies.at(-1) ?? Number.NaN).toFixed(1),
  'server CPU ms/req': (r.serverCpuMs / r.requests).toFixed(3),
  'of it system': (r.serverSysMs / r.requests).toFixed(3),
  'loop / writers / other threads ms/req': r.threads
    ? [r.threads.loop, r.threads.writers, r.threads.other]
        .map((ms) => (ms / r.requests).toFixed(3))
        .join(' / ')
    : '-',
  'load-gen CPU ms/req': (r.clientCpuMs / r.requests).toFixed(3),
  'fsyncs/req': r.fsyncs === undefined ? '-' : (r.fsyncs / r.requests).toFixed(3),
  'server loop delay p99 / max ms': r.loop ? `${r.loop.p99} / ${r.loop.max}` : '-',
});

export const runEmbeddedConcurrencyBench = async (options: { stats?: boolean } = {}) => {
  const withStats = options.stats ?? true;
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-conc-'));
  const prof = process.env.BENCH_CPU_PROF;
  const pinnedSelf = pinSelf();
  const server = await startPinnedServer(
    { HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT, HEFESTO_COMPACT_INTERVAL_MS: '0' },
    [
      ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
      ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ],
  );
  const url = server.url;
  // Other processes on the server's core take its CPU and add to every latency: say how busy.
  const load0 = loadavg()[0] ?? Number.NaN;
  const tag = (p: string) => (c: number, i: number) =>
    appendOnce(url, `${p}-${c}`, `${p}-${c}-${i}`);
  try {
    await phase(server, 8, 40, tag('warm'), false);
    await phase(server, 1, 300, () => healthzOnce(url), false);
    const health = await phase(server, 1, 2000, () => healthzOnce(url), withStats);
    const one = await phase(server, 1, 600, tag('one'), withStats);
    const sixteen = await phase(server, 16, 60, tag('sixteen'), withStats);
    // 64 clients, with /healthz probed every 2 ms from another process while they run.
    const probe = startProbe(`${url}/healthz`);
    const sixtyFour = await phase(server, 64, 25, tag('sixtyfour'), withStats);
    const probes = (await probe.stop()).sort((a, b) => a - b);

    printTable(
      `Embedded server under concurrency (server on core 0${server.pinned ? '' : ' (not pinned)'}, load generator ${pinnedSelf ? 'on the last core' : 'not pinned'})`,
      [
        row('GET /healthz, 1 client', health),
        row('append 1 event, 1 client', one),
        row('append 1 event, 16 clients, 16 streams', sixteen),
        row('append 1 event, 64 clients, 64 streams', sixtyFour),
      ],
    );
    const rate = (r: PhaseResult) => r.requests / r.seconds;
    const cpu = (r: PhaseResult) => r.serverCpuMs / r.requests;
    const p = (r: PhaseResult, q: number) => quantile(r.latencies, q);
    const budgets = [
      [
        '16-client / 1-client append rate',
        rate(sixteen) / rate(one),
        '>= 3',
        rate(sixteen) / rate(one) >= 3,
      ],
      [
        'server CPU per append / per GET /healthz (1 client)',
        cpu(one) / cpu(health),
        '<= 3',
        cpu(one) / cpu(health) <= 3,
      ],
      [
        'p99 / p50 at 64 clients',
        p(sixtyFour, 0.99) / p(sixtyFour, 0.5),
        '<= 10',
        p(sixtyFour, 0.99) / p(sixtyFour, 0.5) <= 10,
      ],
      [
        'GET /healthz p99 during the 64 clients (ms)',
        quantile(probes, 0.99),
        '< 10',
        quantile(probes, 0.99) < 10,
      ],
      // Not budgets: the same CPU ratio under load, and the fsyncs (issue 16: "well below 1").
      [
        'server CPU per append / per GET /healthz (16 clients)',
        cpu(sixteen) / cpu(health),
        'printed',
        undefined,
      ],
      ...[sixteen, sixtyFour].map(
        (r) =>
          [
            `fsyncs per acknowledged append (${r === sixteen ? 16 : 64} clients)`,
            (r.fsyncs ?? Number.NaN) / r.requests,
            'printed',
            undefined,
          ] as const,
      ),
    ] as const;
    // Issue 25's budgets, the same run: a lean request path.
    const lean = [
      [
        'server CPU per append / per GET /healthz (1 client)',
        cpu(one) / cpu(health),
        '<= 5',
        cpu(one) / cpu(health) <= 5,
      ],
      [
        'append p50 / GET /healthz p50 (1 client)',
        p(one, 0.5) / p(health, 0.5),
        '<= 3',
        p(one, 0.5) / p(health, 0.5) <= 3,
      ],
      [
        'GET /healthz p99 while 64 clients append (ms)',
        quantile(probes, 0.99),
        '< 20',
        quantile(probes, 0.99) < 20,
      ],
      ['server CPU ms per append (1 client)', cpu(one), 'printed', undefined],
      ['server CPU ms per GET /healthz (1 client)', cpu(health), 'printed', undefined],
      [
        'appends per server-CPU-second (64 clients)',
        sixtyFour.requests / (sixtyFour.serverCpuMs / 1000),
        'printed',
        undefined,
      ],
      [
        'server cores used (64 clients: server CPU s / wall s)',
        sixtyFour.serverCpuMs / 1000 / sixtyFour.seconds,
        'printed',
        undefined,
      ],
    ] as Array<readonly [string, number, string, boolean | undefined]>;
    // The multi-process server (HEFESTO_WORKERS=2: a writer and two workers), on both cores
    // (the load generator shares them; its CPU is counted apart), the same 64 clients.
    const multi = await multiProcessPhase(dir, prof ? join(prof, 'multi') : undefined);
    const perCpuS = (r: PhaseResult) => r.requests / (r.serverCpuMs / 1000);
    printTable('Multi-process server (HEFESTO_WORKERS=2, not pinned) vs one process on core 0', [
      row('append 1 event, 64 clients, one process on core 0', sixtyFour),
      row('append 1 event, 64 clients, writer + 2 workers, both cores', multi),
    ]);
    lean.push(
      [
        'appends per server-CPU-second (64 clients, HEFESTO_WORKERS=2, both cores)',
        perCpuS(multi),
        'printed',
        undefined,
      ],
      [
        'of the server CPU ms per append (HEFESTO_WORKERS=2), the writer process',
        multi.writerCpuMs / multi.requests,
        'printed',
        undefined,
      ],
      [
        'of the server CPU ms per append (HEFESTO_WORKERS=2), the two workers',
        (multi.serverCpuMs - multi.writerCpuMs) / multi.requests,
        'printed',
        undefined,
      ],
      [
        'server cores used (64 clients, HEFESTO_WORKERS=2: server CPU s / wall s)',
        multi.serverCpuMs / 1000 / multi.seconds,
        'printed',
        undefined,
      ],
      [
        'server on both cores: appends per server-CPU-second, 2 workers / 1 process',
        perCpuS(multi) / perCpuS(sixtyFour),
        '>= 1',
        perCpuS(multi) / perCpuS(sixtyFour) >= 1,
      ],
      [
        'appends per second, 2 workers / 1 process (64 clients)',
        multi.requests / multi.seconds / (sixtyFour.requests / sixtyFour.seconds),
        'printed',
        undefined,
      ],
    );
    printTable(
      'Budgets (issue 25, a lean request path), from this run',
      lean.map(([name, value, budget, met]) => ({
        figure: name,
        value: value.toFixed(2),
        budget,
        met: met === undefined ? '-' : met ? 'yes' : 'NO',
      })),
    );
    printTable(
      'Budgets (issue 16), from this run',
      budgets.map(([name, value, budget, met]) => ({
        figure: name,
        value: value.toFixed(2),
        budget,
        met: met === undefined ? '-' : met ? 'yes' : 'NO',
      })),
    );
    console.log(
      `\nMachine load average (1 min) at the start and the end: ${load0.toFixed(1)}, ${(loadavg()[0] ?? Number.NaN).toFixed(1)}.`,
    );
    console.log(
      `\n/healthz probes during the 64 clients: ${probes.length}, p50 ${quantile(probes, 0.5).toFixed(2)} ms, p99 ${quantile(probes, 0.99).toFixed(2)} ms, max ${(probes.at(-1) ?? 0).toFixed(1)} ms.`,
    );
  } finally {
    await server.stop();
    if (process.env.BENCH_SERVER_OUTPUT)
      writeFileSync(process.env.BENCH_SERVER_OUTPUT, server.output());
    rmSync(dir, { recursive: true, force: true });
  }
};

/**
 * The 64 clients against the multi-process server on a data dir of its own: a writer process
 * and two workers (functions/wiring/processes.ts), on every core; CPU summed over all three.
 */
const multiProcessPhase = async (
  base: string,
  prof: string | undefined,
): Promise<PhaseResult & { writerCpuMs: number }> => {
  const dir = join(base, 'multi');
  const server = await startPinnedServer(
    {
      HEFESTO_DATA_DIR: dir,
      HEFESTO_API_KEY: ROOT,
      HEFESTO_COMPACT_INTERVAL_MS: '0',
      HEFESTO_WORKERS: '2',
    },
    // BENCH_CPU_PROF: every process profiled (node:cluster passes the flags to the workers).
    prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [],
    { allCores: true },
  );
  try {
    const tag = (p: string) => (c: number, i: number) =>
      appendOnce(server.url, `${p}-${c}`, `${p}-${c}-${i}`);
    // The same history as the one-process server's before its 64 clients (JIT-warm workers).
    await phase(server, 8, 40, tag('warm'), false);
    await phase(server, 1, 600, tag('one'), false);
    await phase(server, 16, 60, tag('sixteen'), false);
    const writer0 = processCpuMs(server.pid);
    const result = await phase(server, 64, 25, tag('sixtyfour'), false);
    return { ...result, writerCpuMs: processCpuMs(server.pid) - writer0 };
  } finally {
    await server.stop();
  }
};

if (import.meta.url === `file://${process.argv[1]}`) {
  await runEmbeddedConcurrencyBench({ stats: process.env.BENCH_NO_STATS === undefined });
}
