import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Chunk, type ChunkRef, chunksOfValue } from '../shared/domain/state-v2/index.js';
import { EMPTY_STATE_DIGEST_V2 } from '../shared/domain/state-v2/merkle-state.js';
import { SIXTY_FOUR_MIB_BOMB } from '../test/support/dedup-bomb.js';
import { type PinnedServer, ROOT, startPinnedServer } from './embedded-load.js';
import { printTable } from './harness.js';

/**
 * Issue 21 item 3: work budgets. Against the embedded server as a process of its own (data
 * dir, a base snapshot at every checkpoint, HEFESTO_MEMORY_MIB 1024), each phase beside the
 * server's peak RSS (sampled from /proc every 10 ms), the longest its event loop was blocked
 * (its own loop-delay monitor, 1 ms resolution), and GET /healthz latency probed every 2 ms
 * from another process (budget: no block and no p99 over 100 ms):
 *
 *   A. the dedup bomb: 64 MiB of `[[{},{},...],...]` as 4 chunks (~68 KB), uploaded, then
 *      named by a checkpoint's ref, twice: each answered 413 ErrPayloadTooLarge (on main: 36 s
 *      and 3.9 GB, and the second kills the server);
 *   B. a legitimate 64 MiB value (65,000 distinct records of ~1 KB): its 1,033 chunks uploaded;
 *   C. the checkpoint that sets it by ref (measured, read and verified from its chunks, its
 *      tree hashed) and the base snapshot that checkpoint writes, in one request;
 *   D. a read key's GET /state of that stream (the whole 64 MiB state, hydrated from the
 *      base's chunks and streamed);
 *   E. a 57 MiB string (one JSON value, 114 pages of 512 KiB): uploaded, set by ref, read back;
 *   F. 6 concurrent GET /state of the 64 MiB stream: each within the work budget, together past
 *      the memory ceiling (~200 MB materialised each, 768 MiB to lend): the ones past it wait
 *      their turn.
 *
 * `npx tsx bench/work-budgets.ts` runs it alone; HEFESTO_BENCH_CPU_PROF=dir writes the
 * server's CPU profile there.
 */

const rssKiB = (pid: number): number => {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)/m);
  return Number(m?.[1] ?? 0);
};

/**
 * GET /healthz every 2 ms from a process of its own, on a connection that may be reset (a
 * failed probe counts as its time to fail); `ready` once it has answered 20 times.
 */
const PROBE = `
  const url = process.argv[1];
  const latencies = [];
  let running = true;
  process.on('SIGTERM', () => { running = false; });
  while (running) {
    const s = performance.now();
    try { const res = await fetch(url); await res.arrayBuffer(); } catch {}
    latencies.push(performance.now() - s);
    if (latencies.length === 20) process.stderr.write('ready\\n');
    await new Promise((r) => setTimeout(r, 2));
  }
  process.stdout.write(JSON.stringify(latencies.slice(20)));
`;

const startProbe = async (url: string) => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', PROBE, url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  await new Promise<void>((resolve) => child.stderr?.once('data', () => resolve()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    stop: async (): Promise<number[]> => {
      child.kill('SIGTERM');
      await exited;
      return JSON.parse(out || '[]') as number[];
    },
  };
};

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);

interface PhaseResult {
  phase: string;
  ms: number;
  peakRssMiB: number;
  loopMaxMs: number;
  poolPeakMiB: number;
  healthz: number[];
  note: string;
}

const measure = async (
  server: PinnedServer,
  phase: string,
  run: () => Promise<string>,
): Promise<PhaseResult> => {
  await server.stats(); // resets the server's loop-delay monitor
  let peak = rssKiB(server.pid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKiB(server.pid));
  }, 10);
  const probe = await startProbe(`${server.url}/healthz`);
  const start = performance.now();
  let note = '';
  try {
    note = await run();
  } finally {
    clearInterval(sampler);
  }
  const ms = performance.now() - start;
  await new Promise((r) => setTimeout(r, 100));
  const healthz = (await probe.stop()).sort((a, b) => a - b);
  const { loop, memory } = await server.stats();
  const poolPeakMiB = (memory?.peak ?? 0) / 1024 / 1024;
  return { phase, ms, peakRssMiB: peak / 1024, loopMaxMs: loop.max, poolPeakMiB, healthz, note };
};

const auth = { authorization: `Bearer ${ROOT}` };

const upload = async (url: string, chunks: Chunk[]) => {
  for (const c of chunks) {
    const res = await fetch(`${url}/v1/chunks/${c.hash}`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: c.bytes,
    });
    if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
  }
};

const setRef = async (url: string, stream: string, ref: ChunkRef) => {
  const res = await fetch(`${url}/v1/streams/${stream}/checkpoints`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      ops: [{ op: 'set', path: '/v', ref }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
    }),
  });
  const body = (await res.json()) as { code?: string; budget?: string; needed?: number };
  return { status: res.status, body };
};

/** 57 MiB of text with no two pages alike (a line number on every line). */
const longText = () =>
  Array.from({ length: 540_000 }, (_, i) => `line ${i}: ${'lorem ipsum '.repeat(8)}`).join('\n');

/** 65,000 distinct records of ~1 KB: 64 MiB of canonical JSON, ~195,000 JSON values. */
const legitValue = () =>
  Array.from({ length: 65_000 }, (_, i) => ({
    id: i,
    text: `record ${i} `.padEnd(1000, String.fromCharCode(97 + (i % 26))),
  }));

export const runWorkBudgetsBench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-budgets-'));
  const prof = process.env.HEFESTO_BENCH_CPU_PROF;
  const server = await startPinnedServer(
    {
      HEFESTO_DATA_DIR: dir,
      HEFESTO_API_KEY: ROOT,
      HEFESTO_COMPACT_INTERVAL_MS: '0',
      HEFESTO_SNAPSHOT_EVERY: '1',
    },
    prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [],
  );
  const url = server.url;
  const rows: PhaseResult[] = [];
  try {
    const bomb = SIXTY_FOUR_MIB_BOMB();
    const value = legitValue();
    const legit = chunksOfValue(value);
    const idle = await measure(server, 'idle (1 s)', async () => {
      await new Promise((r) => setTimeout(r, 1000));
      return '';
    });
    rows.push(idle);
    rows.push(
      await measure(server, 'A. dedup bomb: upload + 2 ref checkpoints', async () => {
        await upload(url, bomb.chunks);
        const answers = [];
        for (let i = 0; i < 2; i++) {
          const r = await setRef(url, 'bomb', bomb.ref);
          answers.push(`${r.status} ${r.body.code} ${r.body.budget} ${r.body.needed}`);
        }
        const bytes = bomb.chunks.reduce((n, c) => n + c.bytes.length, 0);
        return `${bomb.chunks.length} chunks, ${bytes} B for ${bomb.ref.size} B; ${answers.join('; ')}`;
      }),
    );
    rows.push(
      await measure(server, 'B. legit 64 MiB: upload its chunks', async () => {
        await upload(url, legit.chunks);
        return `${legit.chunks.length} chunks, ${legit.ref.size} B`;
      }),
    );
    rows.push(
      await measure(server, 'C. legit 64 MiB: ref checkpoint + its base', async () => {
        const r = await setRef(url, 'legit', legit.ref);
        if (r.status !== 201) throw new Error(`legit checkpoint answered ${r.status}`);
        return `${r.status}`;
      }),
    );
    const getState = async () => {
      const res = await fetch(`${url}/v1/streams/legit/state`, { headers: auth });
      const body = await res.arrayBuffer();
      return { status: res.status, bytes: body.byteLength };
    };
    rows.push(
      await measure(server, 'D. GET /state of the 64 MiB stream', async () => {
        const r = await getState();
        return `${r.status}, ${r.bytes} B`;
      }),
    );
    const text = longText();
    const doc = chunksOfValue({ doc: text });
    rows.push(
      await measure(server, 'E. a 57 MiB string: upload, ref checkpoint, GET /state', async () => {
        const t = performance.now();
        await upload(url, doc.chunks);
        const uploaded = performance.now() - t;
        const r = await setRef(url, 'doc', doc.ref);
        if (r.status !== 201) throw new Error(`string checkpoint answered ${r.status}`);
        const set = performance.now() - t - uploaded;
        const res = await fetch(`${url}/v1/streams/doc/state`, { headers: auth });
        const body = (await res.json()) as { state: { v: { doc: string } } };
        if (body.state.v.doc !== text) throw new Error('the string read back is not the one set');
        const read = performance.now() - t - uploaded - set;
        return `${doc.chunks.length} chunks; upload ${uploaded.toFixed(0)} ms, checkpoint ${set.toFixed(0)} ms, read ${read.toFixed(0)} ms`;
      }),
    );
    rows.push(
      await measure(server, 'F. 6 concurrent GET /state of the 64 MiB stream', async () => {
        const started = performance.now();
        const answers = await Promise.all(
          Array.from({ length: 6 }, async () => {
            const r = await getState();
            return `${r.status} at ${((performance.now() - started) / 1000).toFixed(1)} s`;
          }),
        );
        return answers.join(', ');
      }),
    );
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(
    `Work budgets (issue 21 item 3): embedded server process, /healthz probed from another process (load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})`,
    rows.map((r) => ({
      phase: r.phase,
      'time ms': r.ms.toFixed(0),
      'server peak RSS MiB': r.peakRssMiB.toFixed(0),
      'memory pool peak MiB': r.poolPeakMiB.toFixed(0),
      'server loop blocked max ms': r.loopMaxMs.toFixed(0),
      '/healthz p99 ms (budget 100)': quantile(r.healthz, 0.99).toFixed(1),
      '/healthz max ms': (r.healthz.at(-1) ?? 0).toFixed(1),
      probes: r.healthz.length,
      result: r.note,
    })),
  );
};

if (import.meta.url === `file://${process.argv[1]}`) await runWorkBudgetsBench();
