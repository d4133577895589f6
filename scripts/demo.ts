import { type ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startServer } from './lib/server-process.js';

/**
 * `npm run demo`: crash-resume with observation replay, a paid-once side effect, and a hot
 * migration between two workers, end to end against the embedded server.
 *
 * 1. Crashes: the example agent (scripts/demo-agent.ts) runs 50 turns in a child process and
 *    is SIGKILLed at random turns — after a model output was recorded, after a checkpoint —
 *    and once right after it charged the payment provider but before recording the effect
 *    as complete. It is restarted each time.
 * 2. Migration: worker A holds the stream's lease; mid-run the stream is drained; worker B
 *    takes the lease (epoch + 1) and finishes the run; A's late write is fenced.
 * 3. The same agent runs uninterrupted on a third stream.
 * Checks: model calls = turns, one charge per run, the three final digests equal, the late
 * write refused. Exits 1 if any check fails.
 *
 * DEMO_PORT=8790 puts the server on that port (default: a free one); the data directory and
 * the client's trust file are temporary, removed at the end.
 */

const TURNS = 50;
const KEY = `demo-root-key-${randomInt(1e9)}-0123456789`;

interface AgentLines {
  modelCalls: number;
  paused?: string;
  digest?: string;
  resumed?: { turn: number; epoch: number };
  stopped?: string;
  late?: string;
}

const spawnAgent = (
  env: Record<string, string>,
  onLine: (line: string, out: AgentLines, child: ChildProcess) => void,
) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo-agent.ts'], {
    env: { ...process.env, HEFESTO_KEY: KEY, DEMO_TURNS: String(TURNS), ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const out: AgentLines = { modelCalls: 0 };
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [word, a, b] = line.split(' ');
    if (word === 'MODEL_CALL') out.modelCalls++;
    if (word === 'RESUMED') out.resumed = { turn: Number(a), epoch: Number(b) };
    if (word === 'DONE') out.digest = a;
    if (word === 'STOPPED') out.stopped = a;
    if (word === 'LATE_WRITE') out.late = a;
    if (word === 'PAUSED') out.paused = `${a}:${b}`;
    onLine(line, out, child);
  });
  const done = new Promise<AgentLines & { code: number | string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ ...out, code: code ?? signal ?? -1 })),
  );
  return { child, out, done };
};

/** Distinct random kill points (turn:step), plus one between the charge and its record. */
const chooseKillPoints = (count: number): string[] => {
  const points = new Set<string>(['5:paid']);
  while (points.size < count + 1)
    points.add(`${randomInt(2, TURNS)}:${randomInt(2) === 0 ? 'observed' : 'checkpointed'}`);
  return [...points].sort((x, y) => Number(x.split(':')[0]) - Number(y.split(':')[0]));
};

const chargesFor = (file: string, key: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.includes(`"${key}"`)).length
    : 0;

/** DEMO_PORT, if set: a port number, else the demo stops before starting anything. */
const demoPort = (value: string | undefined): number | undefined => {
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535) {
    console.error(`DEMO_PORT must be a port number (1..65535), got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return port;
};

const main = async (): Promise<number> => {
  const port = demoPort(process.env.DEMO_PORT);
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-demo-'));
  const paymentsFile = join(dir, 'payments.jsonl');
  const server = await startServer(
    { HEFESTO_DATA_DIR: join(dir, 'data'), HEFESTO_API_KEY: KEY, HEFESTO_LOG_LEVEL: 'warn' },
    { port },
  );
  // The agents verify what they read (verify: true) and keep the signed heads they trust in
  // a trust file: the demo's own, beside its data, never the user's ~/.hefesto (its server's
  // streams are gone when the demo ends, and a later server on the same port would meet them).
  const base = {
    HEFESTO_URL: server.url,
    DEMO_PAYMENTS: paymentsFile,
    HEFESTO_TRUST_FILE: join(dir, 'trusted-heads.json'),
  };
  try {
    // 1. Crashes. DEMO_KILL_AT="9:observed,5:paid" replays a given run.
    const killPoints = process.env.DEMO_KILL_AT?.split(',') ?? chooseKillPoints(4);
    console.log(
      `Embedded server at ${server.url}.\n1. SIGKILL at ${killPoints.join(', ')} (turn:step):`,
    );
    let pending = [...killPoints];
    let crashes = 0;
    let starts = 0;
    let modelCalls = 0;
    let crashy: (AgentLines & { code: number | string }) | undefined;
    while (starts < killPoints.length + 3) {
      starts++;
      const agent = spawnAgent(
        { ...base, DEMO_STREAM: 'demo-crashy', DEMO_PAUSE_AT: pending.join(',') },
        (line, _out, child) => {
          if (line.startsWith('PAUSED')) child.kill('SIGKILL');
        },
      );
      const run = await agent.done;
      modelCalls += run.modelCalls;
      if (run.paused) {
        crashes++;
        pending = pending.filter((p) => p !== run.paused);
        console.log(
          `   killed at ${run.paused} (started at turn ${run.resumed?.turn}, ${run.modelCalls} model calls)`,
        );
        continue;
      }
      crashy = run;
      break;
    }

    // 2. Hot migration: drain worker A mid-run, worker B takes over, A's late write is fenced.
    const flag = join(dir, 'b-started');
    let drainMs = 0;
    const goOn = join(dir, 'a-go-on');
    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const a = spawnAgent(
      {
        ...base,
        DEMO_STREAM: 'demo-migrate',
        DEMO_OWNER: 'worker-a',
        DEMO_LATE_WRITE_AFTER: flag,
        DEMO_HOLD_AT: '20',
        DEMO_HOLD_UNTIL: goOn,
      },
      (line, out) => {
        if (!line.startsWith('HOLDING') || !out.resumed) return;
        // Worker A is mid-turn 20 (its model output recorded): drain the stream now.
        const started = performance.now();
        void fetch(`${server.url}/v1/streams/demo-migrate/lease/drain`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ owner: 'worker-a', epoch: out.resumed.epoch, graceMs: 5000 }),
        }).then(async (res) => {
          drainMs = performance.now() - started;
          if (res.status !== 200)
            console.log(`   drain answered ${res.status}: ${await res.text()}`);
        });
        // Once the lease says draining, let A try to finish its turn.
        void (async () => {
          for (let i = 0; i < 200; i++) {
            const res = await fetch(`${server.url}/v1/streams/demo-migrate/lease`, {
              headers: auth,
            });
            if (res.ok && ((await res.json()) as { draining: boolean }).draining) break;
            await new Promise((r) => setTimeout(r, 10));
          }
          writeFileSync(goOn, 'go');
        })();
      },
    );
    while (!a.out.stopped && a.child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    while (drainMs === 0) await new Promise((r) => setTimeout(r, 20));
    const b = spawnAgent(
      { ...base, DEMO_STREAM: 'demo-migrate', DEMO_OWNER: 'worker-b' },
      (line) => {
        if (line.startsWith('RESUMED')) writeFileSync(flag, 'go');
      },
    );
    const [aDone, bDone] = await Promise.all([a.done, b.done]);
    console.log(
      `2. worker A (epoch ${aDone.resumed?.epoch}) stopped with ${aDone.stopped} at turn ${bDone.resumed?.turn}; ` +
        `drain took ${drainMs.toFixed(0)} ms; worker B resumed with epoch ${bDone.resumed?.epoch}; A's late write: ${aDone.late}`,
    );

    // 3. The same agent, uninterrupted.
    const clean = await spawnAgent({ ...base, DEMO_STREAM: 'demo-clean' }, () => {}).done;

    const migrateCalls = aDone.modelCalls + bDone.modelCalls;
    const charges = ['demo-crashy', 'demo-migrate', 'demo-clean'].map((s) =>
      chargesFor(paymentsFile, `${s}/pay-order`),
    );
    const rows: Array<[string, string, boolean]> = [
      ['turns', String(TURNS), true],
      ['crashes (SIGKILL)', String(crashes), crashes === killPoints.length],
      ['resumes', String(starts - 1), starts - 1 === crashes],
      ['model calls, crash run', `${modelCalls}`, modelCalls === TURNS],
      [
        'model calls, migrated run (A + B)',
        `${aDone.modelCalls} + ${bDone.modelCalls}`,
        migrateCalls === TURNS,
      ],
      [
        'payments charged (crash, migrated, clean)',
        charges.join(', '),
        charges.every((c) => c === 1),
      ],
      [
        'hand-over',
        `epoch ${aDone.resumed?.epoch} -> ${bDone.resumed?.epoch}, late write ${aDone.late}`,
        aDone.stopped !== undefined &&
          bDone.resumed?.epoch === (aDone.resumed?.epoch ?? 0) + 1 &&
          aDone.late === 'ErrFenced',
      ],
      [
        'final state digest, crash run',
        crashy?.digest ?? '(none)',
        crashy?.code === 0 && crashy.digest !== undefined,
      ],
      [
        'final state digest, migrated run',
        bDone.digest ?? '(none)',
        bDone.code === 0 && bDone.digest === crashy?.digest,
      ],
      [
        'uninterrupted run digest',
        clean.digest ?? '(none)',
        clean.code === 0 && clean.digest === crashy?.digest && clean.modelCalls === TURNS,
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
