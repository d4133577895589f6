import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../scripts/lib/server-process.js';
import { HefestoClient } from '../shared/client/client.js';
import { resume } from '../shared/client/harness.js';
import type { DeltaOp } from '../shared/client/types.js';
import { printTable } from './harness.js';

/**
 * Time for a worker to resume a durable run (hydrate the state and load the current turn's
 * observations) at turn 1,000, over HTTP against the embedded server: a fresh client each
 * time, median of several runs. The stream holds one observation and one checkpoint per
 * turn (2,000 events, 40 base snapshots at K = 25), and the current turn has one recorded
 * observation.
 */

const KEY = 'bench-resume-root-key-0123456789';

export const runResumeBench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-resume-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dir,
    HEFESTO_API_KEY: KEY,
    HEFESTO_LOG_LEVEL: 'silent',
  });
  try {
    const client = new HefestoClient({ baseUrl: server.url, apiKey: KEY });
    const build = performance.now();
    const run = await resume(client, 'resume-bench');
    while (run.turn <= 1000) {
      const turn = run.turn;
      const reply = await run.observe('model', () => ({ text: `reply ${turn}`.padEnd(200, '.') }));
      const ops: DeltaOp[] = turn === 1 ? [{ op: 'set', path: '/notes', value: {} }] : [];
      ops.push(
        { op: 'set', path: `/notes/n${turn % 50}`, value: reply },
        { op: 'set', path: '/turn', value: turn },
      );
      await run.checkpoint(ops);
    }
    await run.observe('model', () => 'pending for turn 1001');
    const buildSeconds = (performance.now() - build) / 1000;

    const samples: number[] = [];
    for (let i = 0; i < 9; i++) {
      const fresh = new HefestoClient({ baseUrl: server.url, apiKey: KEY });
      const t0 = performance.now();
      const resumed = await resume(fresh, 'resume-bench');
      samples.push(performance.now() - t0);
      if (resumed.turn !== 1001) throw new Error(`resumed at turn ${resumed.turn}`);
    }
    samples.sort((a, b) => a - b);
    const verified: number[] = [];
    for (let i = 0; i < 5; i++) {
      const fresh = new HefestoClient({ baseUrl: server.url, apiKey: KEY, verify: true });
      const t0 = performance.now();
      await resume(fresh, 'resume-bench');
      verified.push(performance.now() - t0);
    }
    verified.sort((a, b) => a - b);
    printTable('Worker resume at turn 1,000 (embedded server over HTTP, fresh client each run)', [
      {
        mode: 'resume (hydrate head + current turn observations)',
        runs: samples.length,
        'median ms': samples[4]?.toFixed(1) ?? '',
        'min ms': samples[0]?.toFixed(1) ?? '',
      },
      {
        mode: 'same, client-side verification on',
        runs: verified.length,
        'median ms': verified[2]?.toFixed(1) ?? '',
        'min ms': verified[0]?.toFixed(1) ?? '',
      },
    ]);
    console.log(
      `\nBuilding the 1,000-turn stream (2,001 durable writes over HTTP) took ${buildSeconds.toFixed(1)} s.`,
    );
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
};
