import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
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

/** [user, system] ms of a process (all its threads) or, with `tid`, of one of its threads. */
const cpuSplit = (pid: number, tid?: number): [number, number] => {
  const stat = readFileSync(`/proc/${pid}${tid ? `/task/${tid}` : ''}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [Number(f[11]) * TICK_MS, Number(f[12]) * TICK_MS];
};

/** CPU ms (user + system) of one process alone (all its threads, not its children). */
export const processCpuMs = (pid: number): number => {
  const [user, system] = cpuSplit(pid);
  return user + system;
};

/** The child processes of `pid` (the multi-process server's workers), from /proc. */
const childrenOf = (pid: number): number[] => {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
        .split(' ')
        .filter(Boolean)
        .map(Number),
    );
  } catch {
    return [];
  }
};

/** [user, system] ms of a process and its child processes (HEFESTO_WORKERS > 1: the workers). */
const treeCpuSplit = (pid: number): [number, number] => {
  const total = cpuSplit(pid);
  for (const child of childrenOf(pid)) {
    try {
      const [user, system] = cpuSplit(child);
      total[0] += user;
      total[1] += system;
    } catch {
      // that process is gone
    }
  }
  return total;
};

/** CPU ms (user + system) of the server by thread: its event loop, its durable writers, the rest. */
export interface ThreadCpu {
  loop: number;
  writers: number;
  other: number;
}

export interface ServerStats {
  fsyncs: number;
  commits: number;
  writes: number;
  maxBatch: number;
  tids: number[];
  loop: { p50: number; p99: number; max: number };
  /** The memory pool's counters since the last call (memory-pool.ts). */
  memory?: { capacity: number; requests: number; caches: number; peak: number; waited: number };
}

export interface PinnedServer {
  url: string;
  child: ChildProcess;
  pid: number;
  pinned: boolean;
  /** CPU time (user + system, all threads) the server has used, in ms. */
  cpuMs(): number;
  /** The same, split: [user, system]. */
  cpuSplitMs(): [number, number];
  /** The same, by thread; `writers`: the durable writer's thread ids (from `stats()`). */
  threadCpuMs(writers: number[]): ThreadCpu;
  /**
   * The server's durable-write counters (fsyncs and commits) and its event loop's delay since
   * the last call (ms), via SIGUSR2.
   */
  stats(): Promise<ServerStats>;
  stop(): Promise<void>;
  /** What the server printed. */
  output(): string;
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
  options: { allCores?: boolean } = {},
): Promise<PinnedServer> => {
  const port = await freePort();
  // allCores: the server (every process of it) on every core, the load generator's too.
  const pinned = hasTaskset && cores() >= 2 && options.allCores !== true;
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
      const [user, system] = treeCpuSplit(pid);
      return user + system;
    },
    cpuSplitMs: () => treeCpuSplit(pid),
    threadCpuMs: (writers) => {
      const sum = ([user, system]: [number, number]) => user + system;
      const total = sum(cpuSplit(pid));
      const loop = sum(cpuSplit(pid, pid));
      let inWriters = 0;
      for (const tid of writers) {
        try {
          inWriters += sum(cpuSplit(pid, tid));
        } catch {
          // that thread is gone
        }
      }
      return { loop, writers: inWriters, other: total - loop - inWriters };
    },
    stats: async () => {
      const seen = out.length;
      child.kill('SIGUSR2');
      for (;;) {
        const line = out.slice(seen).match(/^durable-writes (\{.*\})$/m);
        if (line?.[1]) return JSON.parse(line[1]) as ServerStats;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
    output: () => out,
  };
};

const PROBE = `
  const url = process.argv[1];
  const latencies = [];
  let running = true;
  process.on('SIGTERM', () => { running = false; });
  while (running) {
    const s = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    latencies.push(performance.now() - s);
    await new Promise((r) => setTimeout(r, 2));
  }
  process.stdout.write(JSON.stringify(latencies));
`;

/**
 * GET `url` every 2 ms from a process of its own (so that what it measures is the server, not
 * a load generator busy with other responses), until `stop` is called; resolves the latencies.
 */
export const startProbe = (url: string) => {
  const core = cores() - 1;
  const node = [process.execPath, '--input-type=module', '-e', PROBE, url];
  const [cmd, ...args] = hasTaskset && core > 0 ? ['taskset', '-c', String(core), ...node] : node;
  const child = spawn(cmd as string, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    stop: async (): Promise<number[]> => {
      child.kill('SIGTERM');
      await exited;
      return JSON.parse(out || '[]') as number[];
    },
  };
};
