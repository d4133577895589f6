import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/server-process.js';
import {
  childrenOf,
  commandOf,
  hasProc,
  killTree,
  listenerPids,
  parentOf,
  type Spawned,
  spawnCollected,
  waitForOutput,
  waitHealthy,
} from './process-tools.js';

/**
 * How the embedded server starts: as one Node process (the documented start, and what
 * `npm start` execs into), so that a signal sent to the pid a supervisor sees reaches the
 * server itself; and the first API key is made only once the port is bound, so a busy port
 * leaves no key that was never shown.
 */

// The built server (what `npm start` runs; the test setup builds it: test/support/build-dist.ts).
const SERVER = ['dist/node/server.mjs'];
const running: Spawned[] = [];
const dirs: string[] = [];

const dataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-start-'));
  dirs.push(dir);
  return dir;
};

const track = (spawned: Spawned) => {
  running.push(spawned);
  return spawned;
};

afterEach(() => {
  for (const s of running.splice(0)) killTree(s.child.pid);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The server's child processes: none (it runs as built JavaScript, no loader, no helper). */
const children = (pid: number) => childrenOf(pid).map((child) => commandOf(child).join(' '));

/** Sends SIGTERM to `pid` and expects the server to shut down the documented way. */
const expectCleanStop = async (pid: number, spawned: Spawned, exit: number | string = 0) => {
  process.kill(pid, 'SIGTERM');
  expect(await spawned.exited).toBe(exit);
  const lines = spawned.output();
  expect(lines).toContain('"signal":"SIGTERM","msg":"shutting down"');
  expect(lines).toContain('"msg":"stopped"');
};

describe.runIf(hasProc)('the documented start: node dist/node/server.mjs', () => {
  it('is one process: the pid that listens, with no wrapper, and SIGTERM to it stops it cleanly', async () => {
    const port = await freePort();
    const server = track(
      spawnCollected(process.execPath, SERVER, { HEFESTO_DATA_DIR: dataDir(), PORT: `${port}` }),
    );
    await waitHealthy(`http://127.0.0.1:${port}`, server);
    const pid = server.child.pid as number;

    expect(listenerPids(port)).toEqual([pid]);
    expect(children(pid)).toEqual([]);
    await waitForOutput(server, `docs: /docs, pid ${pid})`);
    await expectCleanStop(pid, server);
  });
});

describe.runIf(hasProc)('npm start', () => {
  it('execs into that one process: npm -> the server, which SIGTERM stops cleanly', async () => {
    const port = await freePort();
    const npm = track(
      spawnCollected('npm', ['start'], { HEFESTO_DATA_DIR: dataDir(), PORT: `${port}` }),
    );
    await waitHealthy(`http://127.0.0.1:${port}`, npm);

    const [pid, ...others] = listenerPids(port);
    expect(others).toEqual([]);
    if (pid === undefined) throw new Error('nothing listens');
    expect(parentOf(pid)).toBe(npm.child.pid);
    expect(commandOf(pid)).toEqual(['node', ...SERVER]);
    expect(children(pid)).toEqual([]);
    // The server exits 0, and npm with it.
    await expectCleanStop(pid, npm, 0);
  });

  it('passes on a SIGTERM sent to npm itself: the server stops cleanly', async () => {
    const port = await freePort();
    const npm = track(
      spawnCollected('npm', ['start'], { HEFESTO_DATA_DIR: dataDir(), PORT: `${port}` }),
    );
    await waitHealthy(`http://127.0.0.1:${port}`, npm);
    await expectCleanStop(npm.child.pid as number, npm, 0);
    expect(listenerPids(port)).toEqual([]);
  });
});

describe('the first API key', () => {
  let blocker: Server | undefined;
  afterEach(() => {
    blocker?.close();
    blocker = undefined;
  });

  it('is not created when the port is busy: the start fails saying so, and the next start shows it', async () => {
    const dir = dataDir();
    const port = await freePort();
    blocker = createServer();
    await new Promise<void>((resolve) => blocker?.listen(port, resolve));

    const failed = track(
      spawnCollected(process.execPath, SERVER, { HEFESTO_DATA_DIR: dir, PORT: `${port}` }),
    );
    expect(await failed.exited).toBe(1);
    expect(failed.output()).toContain(
      `hefesto: port ${port} is already in use: stop what listens there, or set PORT to another port`,
    );
    expect(failed.output()).not.toContain('hk_');

    await new Promise((resolve) => blocker?.close(resolve));
    blocker = undefined;
    const next = track(
      spawnCollected(process.execPath, SERVER, { HEFESTO_DATA_DIR: dir, PORT: `${port}` }),
    );
    await waitHealthy(`http://127.0.0.1:${port}`, next);
    await waitForOutput(next, /^ {2}hk_\S+$/m);
    const key = /^ {2}(hk_\S+)$/m.exec(next.output())?.[1];
    expect(next.output()).toContain('Created the first API key (tenant default');
    expect(key).toBeDefined();
    const res = await fetch(`http://127.0.0.1:${port}/v1/streams/s/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ type: 'observation', payload: {} }] }),
    });
    expect(res.status).toBe(201);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  });
});
