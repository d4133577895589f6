import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from '../scripts/lib/server-process.js';

/**
 * Load against the embedded server as a separate process: spawning it pinned to one core
 * (`taskset`) and this process, the load generator, to another; reading the server's CPU time
 * (all its threads) from /proc; asking it for its durable-write counters (SIGUSR2).
 */

export const ROOT = 'bench-root-key-0123456789abcdef';

const TICK_MS = 1000 / Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim() || 100);
const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const cores = (): number => {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('processor')).length;
  } catch {
    return 1;
  }
};

export interface PinnedServer {
  url: string;
  child: ChildProcess;
  pid: number;
  pinned: boolean;
  /** CPU time (user + system, all threads) the server has used, in ms. */
  cpuMs(): number;
  /** The server's durable-write counters (fsyncs and commits), via SIGUSR2. */
  stats(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/** This process (every thread) onto the last core, when there are two or more. */
export const pinSelf = (): boolean => {
  const n = cores();
  if (!hasTaskset || n < 2) return false;
  return spawnSync('taskset', ['-a', '-cp', String(n - 1), String(process.pid)]).status === 0;
};

export const startPinnedServer = async (
  env: Record<string, string>,
  nodeFlags: string[] = [],
): Promise<PinnedServer> => {
  const port = await freePort();
  const pinned = hasTaskset && cores() >= 2;
  const node = [process.execPath, ...nodeFlags, '--import', 'tsx', 'functions/server.ts'];
  const [cmd, ...args] = pinned ? ['taskset', '-c', '0', ...node] : node;
  const child = spawn(cmd as string, args, {
    env: { ...process.env, HEFESTO_LOG_LEVEL: 'silent', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: Array<() => void> = [];
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`no /healthz in time:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = child.pid as number;
  return {
    url,
    child,
    pid,
    pinned,
    cpuMs: () => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) * TICK_MS;
    },
    stats: async () => {
      const seen = out.length;
      child.kill('SIGUSR2');
      for (;;) {
        const line = out.slice(seen).match(/^durable-writes (\{.*\})$/m);
        if (line?.[1]) return JSON.parse(line[1]) as Record<string, number>;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
};
