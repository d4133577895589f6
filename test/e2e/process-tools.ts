import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * What the e2e tests of the embedded server need to know about processes, read from Linux's
 * /proc: who listens on a port, a process's parent, children and state. Tests that use it
 * skip themselves elsewhere (`hasProc`).
 */

export const hasProc = existsSync('/proc/self/stat') && existsSync('/proc/net/tcp');

/** Whether `unshare --pid --fork --mount-proc` works here (Linux, as root). */
export const canUnsharePid = (): boolean =>
  spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' }).status ===
  0;

const statFields = (pid: number): string[] | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
};

/** R, S, Z (zombie), ...; undefined once the process is gone (reaped). */
export const stateOf = (pid: number): string | undefined => statFields(pid)?.[0];

export const parentOf = (pid: number): number | undefined => {
  const ppid = statFields(pid)?.[1];
  return ppid === undefined ? undefined : Number(ppid);
};

export const childrenOf = (pid: number): number[] => {
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

/** SIGKILLs `pid` and everything under it (children first seen, so none is orphaned). */
export const killTree = (pid: number | undefined): void => {
  if (pid === undefined) return;
  const below = childrenOf(pid);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
  for (const child of below) killTree(child);
};

export const commandOf = (pid: number): string[] => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
};

/** The pids that hold a socket listening on TCP `port` (any address). */
export const listenerPids = (port: number): number[] => {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // st 0A is LISTEN; the local address ends in the port, in hex.
      if (local && cols[3] === '0A' && Number.parseInt(local.split(':')[1] ?? '', 16) === port) {
        inodes.add(cols[9] ?? '');
      }
    }
  }
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${name}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        const target = readlinkSync(`/proc/${name}/fd/${fd}`);
        return target.startsWith('socket:[') && inodes.has(target.slice(8, -1));
      } catch {
        return false;
      }
    });
    if (holds) pids.push(Number(name));
  }
  return pids;
};

export interface Spawned {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code, or the signal's name. */
  exited: Promise<number | string>;
}

/** Spawns `command` with stdout and stderr collected together. */
export const spawnCollected = (
  command: string,
  args: string[],
  env: Record<string, string>,
): Spawned => {
  const child = spawn(command, args, {
    env: { ...process.env, HEFESTO_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  // 'close', not 'exit': once it fires, all the output has been read.
  const exited = new Promise<number | string>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return { child, output: () => out, exited };
};

/** Waits until `url`/healthz answers 200; throws with the output if `spawned` exits first. */
export const waitHealthy = async (url: string, spawned: Spawned, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void spawned.exited.then(() => {
    exited = true;
  });
  for (;;) {
    if (exited) throw new Error(`server exited early:\n${spawned.output()}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`no /healthz in time:\n${spawned.output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

/** Waits until `predicate` holds, polling; throws after `timeoutMs`. */
export const waitFor = async (what: string, predicate: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

/**
 * Waits until `spawned` has printed `text` (a server answers /healthz before its listening
 * line, printed once it serves, has necessarily been read here).
 */
export const waitForOutput = (spawned: Spawned, text: string | RegExp, timeoutMs = 10_000) =>
  waitFor(
    `output ${text}`,
    () =>
      typeof text === 'string' ? spawned.output().includes(text) : text.test(spawned.output()),
    timeoutMs,
  );
