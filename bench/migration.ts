import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../scripts/lib/server-process.js';
import { HefestoClient } from '../shared/client/client.js';
import { type DurableRun, resume } from '../shared/client/harness.js';
import type { DeltaOp } from '../shared/client/types.js';
import { type Counts, countingAwsApp } from './aws-counting.js';
import { printTable } from './harness.js';

/**
 * Figures of issue #8:
 * - hot migration on the embedded server over HTTP: from calling drain (worker A mid-turn,
 *   its model output recorded) to worker B's first accepted write (B acquires the lease,
 *   resumes, checkpoints the turn A left open), median of several hand-overs, with the drain
 *   and B's part separately;
 * - what an exactly-once effect costs: HTTP requests (counted at the client's fetch) and S3 /
 *   DynamoDB requests (counted at the SDK, against the emulators) per begin/complete pair.
 */

const KEY = 'bench-migration-root-key-0123456789';
const RUNS = 9;
const TURNS = 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const ms = (x: number) => x.toFixed(1);
const stats = (part: string, xs: number[]) => ({
  part,
  runs: xs.length,
  'median ms': ms(median(xs)),
  'min ms': ms(Math.min(...xs)),
  'max ms': ms(Math.max(...xs)),
});

const turnOps = (turn: number, reply: string): DeltaOp[] => [
  { op: 'set', path: `/t${turn % 10}`, value: reply },
  { op: 'set', path: '/turn', value: turn },
];
const observe = (run: DurableRun) => {
  const turn = run.turn;
  return run.observe('model', () => `reply ${turn}`.padEnd(200, '.'));
};

/** One hand-over of a fresh stream from worker A (mid-turn) to worker B. */
const handOver = async (url: string, stream: string) => {
  const client = () => new HefestoClient({ baseUrl: url, apiKey: KEY });
  const a = await resume(client(), stream, { lease: { owner: 'worker-a', ttlMs: 30_000 } });
  while (a.turn <= TURNS) await a.checkpoint(turnOps(a.turn, await observe(a)));
  await observe(a);
  const t0 = performance.now();
  await client().drain(stream, { owner: 'worker-a', epoch: a.epoch ?? 0, graceMs: 5000 });
  const t1 = performance.now();
  const b = await resume(client(), stream, { lease: { owner: 'worker-b', ttlMs: 30_000 } });
  await b.checkpoint(turnOps(b.turn, await observe(b)));
  const t2 = performance.now();
  if (b.turn !== TURNS + 2 || b.epoch !== (a.epoch ?? 0) + 1)
    throw new Error(`B ended at turn ${b.turn}, epoch ${b.epoch}`);
  await a.stop();
  await b.stop({ release: true });
  return { drain: t1 - t0, b: t2 - t1, total: t2 - t0 };
};

/** A HefestoClient whose fetch goes to `send`, counting the HTTP requests it makes. */
const countingClient = (send: typeof fetch, baseUrl: string) => {
  const http = { requests: 0 };
  const client = new HefestoClient({
    baseUrl,
    apiKey: KEY,
    fetch: (input, init) => {
      http.requests++;
      return send(input, init);
    },
  });
  return { client, http };
};

export const runMigrationBench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-migration-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dir,
    HEFESTO_API_KEY: KEY,
    HEFESTO_LOG_LEVEL: 'silent',
  });
  try {
    await handOver(server.url, 'warm-up');
    const samples: Array<Awaited<ReturnType<typeof handOver>>> = [];
    for (let i = 0; i < RUNS; i++) samples.push(await handOver(server.url, `migrate-${i}`));
    const { client, http } = countingClient(fetch, server.url);
    const pairs: number[] = [];
    for (let i = 0; i < 21; i++) {
      const t0 = performance.now();
      await effectPair(client, 'effects-latency', `pay-${i}`);
      pairs.push(performance.now() - t0);
    }
    printTable(
      `Hot migration at turn ${TURNS + 1} (worker A mid-turn) and an effect pair, embedded server over HTTP`,
      [
        stats(
          'drain -> B’s first accepted write',
          samples.map((s) => s.total),
        ),
        stats(
          '  drain (mark draining, wait for quiet, snapshot, release)',
          samples.map((s) => s.drain),
        ),
        stats(
          '  B: acquire lease + resume + first checkpoint',
          samples.map((s) => s.b),
        ),
        stats(`effect begin + complete (${http.requests / pairs.length} HTTP requests)`, pairs),
      ],
    );
    console.log(
      '\nThe drain waits until the stream has had no new event for its quiet period (300 ms by default), so that part is a floor, not overhead.',
    );
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
  await runEffectRequestCounts();
};

const effectPair = async (client: HefestoClient, stream: string, effectKey: string) => {
  const begun = await client.beginEffect(stream, effectKey, {
    kind: 'payment',
    intent: { cents: 500 },
  });
  if (begun.status !== 'acquired') throw new Error(`begin answered ${begun.status}`);
  await client.completeEffect(stream, effectKey, {
    holder: begun.holder,
    result: { receipt: `r-${effectKey}` },
  });
};

/** HTTP first, then the SDK commands by name. */
const byName = (counts: Counts) =>
  Object.entries(counts).sort(([a], [b]) =>
    a === 'HTTP' ? -1 : b === 'HTTP' ? 1 : a < b ? -1 : 1,
  );

const runEffectRequestCounts = async () => {
  const aws = await countingAwsApp(KEY);
  if (!aws) {
    console.log(
      '\n(S3/DynamoDB requests per effect skipped: no emulator endpoints; run via `npm run bench`.)',
    );
    return;
  }
  const { app, counts } = aws;
  try {
    const send: typeof fetch = async (input, init) => app.request(input, init);
    const { client, http } = countingClient(send, 'http://hefesto.test');
    const n = 20;
    const holders: string[] = [];
    const begin = (i: number) =>
      client.beginEffect('effects', `pay-${i}`, { kind: 'payment', intent: { cents: 500 } });
    const phases: Array<[string, (i: number) => Promise<unknown>]> = [
      [
        'begin (acquired)',
        async (i) => {
          const begun = await begin(i);
          if (begun.status !== 'acquired') throw new Error(`begin answered ${begun.status}`);
          holders[i] = begun.holder;
        },
      ],
      [
        'complete',
        (i) =>
          client.completeEffect('effects', `pay-${i}`, { holder: holders[i] ?? '', result: i }),
      ],
      ['begin again (completed)', begin],
    ];
    const rows = [];
    const pair: Counts = {};
    for (const [phase, call] of phases) {
      const total: Counts = { HTTP: 0 };
      for (let i = 0; i < n; i++) {
        for (const k of Object.keys(counts)) delete counts[k];
        http.requests = 0;
        await call(i);
        counts.HTTP = http.requests;
        for (const [name, c] of Object.entries(counts)) total[name] = (total[name] ?? 0) + c;
      }
      for (const [name, c] of byName(total)) {
        rows.push({ phase, request: name, 'per effect': (c / n).toFixed(2) });
        if (phase !== 'begin again (completed)') pair[name] = (pair[name] ?? 0) + c / n;
      }
    }
    for (const [name, c] of byName(pair)) {
      rows.push({ phase: 'begin + complete', request: name, 'per effect': c.toFixed(2) });
    }
    printTable(
      'Requests per exactly-once effect (HTTP at the client; S3 + DynamoDB emulators at the SDK)',
      rows,
    );
    console.log(
      '\nbegin: the effect record read and a conditional put, in one transaction with the lease check. complete: the same for the update, then the ledger event (a segment PutObject and the commit transaction, with its idempotency lookup) and its seq kept on the effect record. A begin of a completed effect reads the record only.',
    );
  } finally {
    await aws.cleanup();
  }
};
