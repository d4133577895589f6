import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/server-process.js';
import {
  canUnsharePid,
  childrenOf,
  hasProc,
  killTree,
  type Spawned,
  spawnCollected,
  stateOf,
  waitFor,
  waitForOutput,
  waitHealthy,
} from './process-tools.js';

/**
 * The data directory lock, as an operator meets it: a server killed with SIGKILL (or by the
 * OOM killer) comes back at once, also while it is still a zombie and also in a container
 * whose restarted server gets the dead one's pid; a second live server on the directory is
 * refused with a message that says so.
 */

const ROOT_KEY = 'root-key-for-lock-tests-0123456789';
// The built server (what `npm start` runs; the test setup builds it: test/support/build-dist.ts).
const SERVER = ['dist/node/server.mjs'];
const running: Spawned[] = [];
let dir: string;

afterEach(() => {
  for (const s of running.splice(0)) killTree(s.child.pid);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const newDir = () => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-lock-e2e-'));
  return dir;
};

const env = (port: number) => ({
  HEFESTO_DATA_DIR: dir,
  HEFESTO_API_KEY: ROOT_KEY,
  HEFESTO_COMPACT_INTERVAL_MS: '0',
  PORT: `${port}`,
});

const track = (spawned: Spawned) => {
  running.push(spawned);
  return spawned;
};

/** A server started as `command args`, once healthy. */
const started = async (command: string, args: string[]) => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const spawned = track(spawnCollected(command, args, env(port)));
  await waitHealthy(url, spawned);
  return { ...spawned, url };
};

const append = (url: string, n: number) =>
  fetch(`${url}/v1/streams/lock-run/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events: [{ type: 'observation', payload: { n } }] }),
  });

const headSeq = async (url: string) => {
  const res = await fetch(`${url}/v1/streams/lock-run`, {
    headers: { authorization: `Bearer ${ROOT_KEY}` },
  });
  return ((await res.json()) as { seq: number }).seq;
};

describe.runIf(hasProc)('a server killed with SIGKILL', () => {
  it('restarts at once on its data dir, while the killed one is still a zombie', async () => {
    newDir();
    // The shell execs into `sleep`, which never reaps: the server stays a zombie once killed,
    // as under a supervisor that has not waited for it yet.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const script = `${process.execPath} ${SERVER.join(' ')} & echo "server=$!"; exec sleep 120`;
    const parent = track(spawnCollected('sh', ['-c', script], env(port)));
    await waitHealthy(url, parent);
    await waitForOutput(parent, /server=\d+/);
    const pid = Number(/server=(\d+)/.exec(parent.output())?.[1]);
    expect((await append(url, 1)).status).toBe(201);

    process.kill(pid, 'SIGKILL');
    await waitFor('the zombie', () => stateOf(pid) === 'Z');
    const second = await started(process.execPath, SERVER);
    expect(stateOf(pid)).toBe('Z');
    expect(await headSeq(second.url)).toBe(1);
    expect((await append(second.url, 2)).status).toBe(201);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});

describe.runIf(hasProc)('a server in a fresh PID namespace (a container)', () => {
  const unshare = canUnsharePid();
  const reason = 'unshare --pid --fork --mount-proc is not available here (needs Linux and root)';

  it("restarts after SIGKILL with the dead server's pid, as pid 1 each time", async (ctx) => {
    ctx.skip(!unshare, reason);
    newDir();
    // What a server of an earlier version leaves as pid 1 of its container when killed.
    writeFileSync(join(dir, 'LOCK'), '1\n');
    const inNamespace = [
      '--pid',
      '--fork',
      '--mount-proc',
      '--kill-child',
      process.execPath,
      ...SERVER,
    ];
    for (let run = 1; run <= 3; run++) {
      const server = await started('unshare', inNamespace);
      await waitForOutput(server, 'docs: /docs, pid 1)');
      expect((await append(server.url, run)).status).toBe(201);
      expect(await headSeq(server.url)).toBe(run);
      // Kill the server itself (pid 1 inside), not unshare: as the OOM killer would.
      const [outerPid] = childrenOf(server.child.pid as number);
      if (outerPid === undefined) throw new Error('no server under unshare');
      process.kill(outerPid, 'SIGKILL');
      await server.exited;
    }
  });
});

describe('two live servers on one data dir', () => {
  it('refuses the second with a clear message, and the first keeps serving', async () => {
    newDir();
    const first = await started(process.execPath, SERVER);
    const port = await freePort();
    const second = track(spawnCollected(process.execPath, SERVER, env(port)));

    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(
      `hefesto: data dir ${dir} is in use by another Hefesto server (pid ${first.child.pid}): ` +
        'stop it, or give this one another HEFESTO_DATA_DIR',
    );
    expect((await append(first.url, 1)).status).toBe(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });
});
