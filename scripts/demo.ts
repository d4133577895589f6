import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startServer } from './lib/server-process.js';

/**
 * `npm run demo`: crash-resume with observation replay, end to end.
 *
 * 1. Starts the embedded server (a temporary data directory).
 * 2. Runs the example agent (scripts/demo-agent.ts) for 50 turns in a child process, and
 *    SIGKILLs it at several random turns — some right after a model output was recorded,
 *    some right after a checkpoint — restarting it each time.
 * 3. Runs the same agent uninterrupted on another stream.
 * 4. Prints turns, crashes, resumes, model calls (must equal turns) and both final state
 *    digests (must be equal); exits 1 if any check fails.
 */

const TURNS = 50;
const KEY = `demo-root-key-${randomInt(1e9)}-0123456789`;

interface AgentRun {
  modelCalls: number;
  paused?: string;
  digest?: string;
  resumedAt?: number;
  code: number | string;
}

const runAgent = (url: string, stream: string, pauseAt: string[]): Promise<AgentRun> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo-agent.ts'], {
      env: {
        ...process.env,
        HEFESTO_URL: url,
        HEFESTO_KEY: KEY,
        DEMO_STREAM: stream,
        DEMO_TURNS: String(TURNS),
        DEMO_PAUSE_AT: pauseAt.join(','),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const result: AgentRun = { modelCalls: 0, code: -1 };
    createInterface({ input: child.stdout }).on('line', (line) => {
      const [word, a, b] = line.split(' ');
      if (word === 'MODEL_CALL') result.modelCalls++;
      if (word === 'RESUMED') result.resumedAt = Number(a);
      if (word === 'DONE') result.digest = a;
      if (word === 'PAUSED') {
        result.paused = `${a}:${b}`;
        child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => resolve({ ...result, code: code ?? signal ?? -1 }));
  });

/** Distinct random kill points: turn and step (after the model output was recorded / after the checkpoint). */
const chooseKillPoints = (count: number): string[] => {
  const points = new Set<string>();
  while (points.size < count) {
    points.add(`${randomInt(2, TURNS)}:${randomInt(2) === 0 ? 'observed' : 'checkpointed'}`);
  }
  return [...points].sort((x, y) => Number(x.split(':')[0]) - Number(y.split(':')[0]));
};

const main = async (): Promise<number> => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-demo-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dir,
    HEFESTO_API_KEY: KEY,
    HEFESTO_LOG_LEVEL: 'warn',
  });
  try {
    // DEMO_KILL_AT="9:observed,18:checkpointed" replays a given run.
    const killPoints = process.env.DEMO_KILL_AT?.split(',') ?? chooseKillPoints(4);
    console.log(
      `Embedded server at ${server.url}; the agent will be killed with SIGKILL at ${killPoints.join(', ')} (turn:step).`,
    );
    let pending = [...killPoints];
    let crashes = 0;
    let starts = 0;
    let modelCalls = 0;
    let final: AgentRun | undefined;
    while (starts < killPoints.length + 3) {
      starts++;
      const run = await runAgent(server.url, 'demo-crashy', pending);
      modelCalls += run.modelCalls;
      if (run.paused) {
        crashes++;
        pending = pending.filter((p) => p !== run.paused);
        console.log(
          `  killed at turn ${run.paused} (this process made ${run.modelCalls} model calls, started at turn ${run.resumedAt})`,
        );
        continue;
      }
      final = run;
      break;
    }
    const clean = await runAgent(server.url, 'demo-clean', []);
    if (process.env.DEMO_DEBUG) {
      for (const stream of ['demo-crashy', 'demo-clean']) {
        const res = await fetch(`${server.url}/v1/streams/${stream}/events?limit=1000`, { headers: { authorization: `Bearer ${KEY}` } });
        const body = (await res.json()) as { events: Array<{ seq: number; type: string; payload: unknown }> };
        console.log(stream, JSON.stringify(body.events.map((e) => [e.seq, e.type, e.payload])));
      }
    }
    const rows: Array<[string, string, boolean]> = [
      ['turns', String(TURNS), true],
      ['crashes (SIGKILL)', String(crashes), crashes === killPoints.length],
      ['resumes', String(starts - 1), starts - 1 === crashes],
      [
        'model calls',
        `${modelCalls} (uninterrupted run: ${clean.modelCalls})`,
        modelCalls === TURNS && clean.modelCalls === TURNS,
      ],
      [
        'final state digest',
        final?.digest ?? '(none)',
        final?.code === 0 && final.digest !== undefined,
      ],
      [
        'uninterrupted run digest',
        clean.digest ?? '(none)',
        clean.code === 0 && clean.digest === final?.digest,
      ],
    ];
    console.log('\n| check | value | ok |\n| --- | --- | --- |');
    for (const [name, value, ok] of rows)
      console.log(`| ${name} | ${value} | ${ok ? 'yes' : 'NO'} |`);
    const failed = rows.filter(([, , ok]) => !ok).map(([name]) => name);
    console.log(failed.length === 0 ? '\ndemo passed' : `\ndemo FAILED: ${failed.join(', ')}`);
    return failed.length === 0 ? 0 : 1;
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
};

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
