import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from '../scripts/build.mjs';
import { freePort } from '../scripts/lib/server-process.js';
import { printTable } from './harness.js';

/**
 * Start-up figures (issue 22 item 7): the CLI's `--help` and `npm start` up to its first
 * `GET /healthz` 200 on a fresh data directory (the first API key included), as a user runs
 * them: built JavaScript (scripts/build.mjs, dist/node). For comparison, the same through
 * tsx from the TypeScript sources, how they ran before. Budgets on a warm machine: `--help`
 * under 300 ms, `npm start` healthy under 2 s.
 *
 * Medians of RUNS runs after one warm-up (HEFESTO_BENCH_STARTUP_RUNS, default 7 for the CLI,
 * 5 for a start). Wall-clock time is what a user waits; on a shared machine it grows with the
 * load (printed), so the rows also give the CPU time (user + system) used: the CLI process's,
 * and for a start that of every process of it until /healthz answered (Linux /proc).
 *
 *   npx tsx bench/startup.ts
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HELP_BUDGET_MS = 300;
const START_BUDGET_MS = 2000;
const RUNS = Number(process.env.HEFESTO_BENCH_STARTUP_RUNS ?? 0) || undefined;

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** One command under bash's `time`: wall and CPU (user + system) milliseconds. */
const timed = (command: string[]): { wallMs: number; cpuMs: number } => {
  const quoted = command.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const out = spawnSync(
    'bash',
    // `time` reports on the shell's stderr whatever the command's redirections.
    ['-c', `TIMEFORMAT='%3R %3U %3S'; time ${quoted} >/dev/null 2>/dev/null`],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, HEFESTO_LOG_LEVEL: 'warn' } },
  );
  if (out.status !== 0) throw new Error(`${command.join(' ')} failed:\n${out.stderr}`);
  const [wall = Number.NaN, user = Number.NaN, sys = Number.NaN] =
    out.stderr.trim().split('\n').at(-1)?.split(' ').map(Number) ?? [];
  return { wallMs: wall * 1000, cpuMs: (user + sys) * 1000 };
};

const verdict = (wallMs: number, budgetMs: number | undefined) =>
  budgetMs === undefined ? '' : `${budgetMs} ms: ${wallMs < budgetMs ? 'met' : 'MISSED'}`;

const cliRow = (label: string, command: string[], runs: number, budgetMs?: number) => {
  timed(command); // warm-up: file cache, tsx's transform cache
  const samples = Array.from({ length: runs }, () => timed(command));
  const wall = median(samples.map((s) => s.wallMs));
  return {
    what: label,
    'wall, median': `${wall.toFixed(0)} ms`,
    'CPU, median': `${median(samples.map((s) => s.cpuMs)).toFixed(0)} ms`,
    budget: verdict(wall, budgetMs),
  };
};

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

/** Clock ticks per second of /proc/<pid>/stat's CPU fields (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;

/**
 * CPU milliseconds used so far by `pid` and the processes under it, their threads included,
 * and the children they have reaped (npm's script shell runs the build check before it execs
 * the server); undefined without /proc.
 */
const treeCpuMs = (pid: number): number | undefined => {
  if (!existsSync(`/proc/${pid}/stat`)) return undefined;
  let ticks = 0;
  const visit = (p: number) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      // utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after "pid (comm) ".
      ticks += (f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0);
      for (const tid of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
        for (const c of children.split(' ').filter(Boolean)) visit(Number(c));
      }
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return (ticks * 1000) / TICKS_PER_S;
};

/**
 * From spawning `command` until it answers /healthz on a fresh data dir: the milliseconds,
 * and the CPU milliseconds its processes used by then.
 */
const timeToHealthy = async (command: string[]): Promise<{ wallMs: number; cpuMs?: number }> => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-start-'));
  const port = await freePort();
  const started = process.hrtime.bigint();
  const [file = '', ...args] = command;
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...process.env, HEFESTO_DATA_DIR: dir, PORT: `${port}`, HEFESTO_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited:\n${stderr}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    const cpuMs = child.pid === undefined ? undefined : treeCpuMs(child.pid);
    return cpuMs === undefined ? { wallMs } : { wallMs, cpuMs };
  } finally {
    child.kill('SIGTERM'); // npm passes it on to the server
    await exited(child);
    rmSync(dir, { recursive: true, force: true });
  }
};

const startRow = async (label: string, command: string[], runs: number, budgetMs?: number) => {
  await timeToHealthy(command); // warm-up
  const samples: Array<{ wallMs: number; cpuMs?: number }> = [];
  for (let i = 0; i < runs; i++) samples.push(await timeToHealthy(command));
  const wall = median(samples.map((s) => s.wallMs));
  const cpu = median(samples.flatMap((s) => (s.cpuMs === undefined ? [] : [s.cpuMs])));
  return {
    what: label,
    'wall, median': `${wall.toFixed(0)} ms`,
    'CPU, median': Number.isNaN(cpu) ? '' : `${cpu.toFixed(0)} ms`,
    budget: verdict(wall, budgetMs),
  };
};

const THROUGH_TSX_CLI = [
  process.execPath,
  '--import',
  'tsx',
  '--input-type=module',
  '-e',
  "const { runCli } = await import('./cli/main.ts'); process.exitCode = await runCli(['--help'], process.env);",
];

export const runStartupBench = async (): Promise<void> => {
  await ensureBuilt();
  const cliRuns = RUNS ?? 7;
  const startRuns = RUNS ?? 5;
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(1))
      .join(' ');
  const loadBefore = load();
  const rows = [
    cliRow('`node -e 0` (the floor: Node itself)', [process.execPath, '-e', '0'], cliRuns),
    cliRow(
      '`node bin/hefesto.mjs --help` (built)',
      [process.execPath, 'bin/hefesto.mjs', '--help'],
      cliRuns,
      HELP_BUDGET_MS,
    ),
    cliRow('CLI `--help` through tsx (before)', THROUGH_TSX_CLI, cliRuns),
    await startRow(
      '`npm start` to healthy, fresh data dir',
      ['npm', 'start'],
      startRuns,
      START_BUDGET_MS,
    ),
    await startRow(
      '`node dist/node/server.mjs` to healthy',
      [process.execPath, 'dist/node/server.mjs'],
      startRuns,
    ),
    await startRow(
      '`node --import tsx functions/server.ts` to healthy (before)',
      [process.execPath, '--import', 'tsx', 'functions/server.ts'],
      startRuns,
    ),
  ];
  printTable(
    `Start-up: the CLI's --help and npm start (node ${process.version}; load average ${loadBefore} before, ${load()} after)`,
    rows,
  );
};

if (process.argv[1] === fileURLToPath(import.meta.url)) await runStartupBench();
