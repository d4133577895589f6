import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../packages/embedded/src/index.js';
import { DataDirInUseError } from '../../shared/domain/errors.js';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';

/**
 * The engine in a host process of its own (fixtures/hold.ts): one process holds a data
 * directory, and an idle engine never keeps its host alive.
 */

const REPO = join(import.meta.dirname, '../..');
/** fixtures/hold.ts bundled once, so each host is a bare `node FILE` (test/support/bundled-script.ts). */
let HOST: string;
beforeAll(async () => {
  HOST = await bundledScript("import './test/embedded/fixtures/hold.ts';");
});
afterAll(removeBundledScripts);

let dir: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-engine-host-'));
});

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Host {
  child: ChildProcess;
  output(): string;
  /** Resolves once the output contains `text`. */
  says(text: string): Promise<void>;
  exited: Promise<number | string>;
}

const host = (mode: 'hold' | 'idle', stream = 'host-1'): Host => {
  const child = spawn(process.execPath, [HOST], {
    cwd: REPO,
    env: { ...process.env, DATA_DIR: dir, MODE: mode, STREAM: stream },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  const listeners: Array<() => void> = [];
  const collect = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return {
    child,
    output: () => out,
    exited,
    says: (text) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (out.includes(text)) resolve();
        };
        listeners.push(check);
        check();
        void exited.then((code) => {
          if (!out.includes(text)) reject(new Error(`host exited ${code} first:\n${out}`));
        });
      }),
  };
};

describe('the engine in a host process', () => {
  it("refuses a second process's open with ErrDataDirInUse naming the holder's pid", async () => {
    const holder = host('hold');
    await holder.says('open ');
    let err: unknown;
    try {
      await openEmbedded({ dataDir: dir, env: {} });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataDirInUseError);
    expect(err).toMatchObject({ code: 'ErrDataDirInUse', dir, pid: holder.child.pid });
    expect((err as Error).message).toContain(`(pid ${holder.child.pid})`);

    // The holder closes (its stdin ends) and exits by itself; then the directory opens here.
    holder.child.stdin?.end();
    await holder.says('closed');
    expect(await holder.exited).toBe(0);
    const engine = await openEmbedded({ dataDir: dir, env: {} });
    try {
      expect((await engine.client.getStream('host-1')).seq).toBe(1);
    } finally {
      await engine.close();
    }
  });

  it('lets its host exit with the engine open and idle, with every acknowledged write kept', async () => {
    // Unref'd: the writer's threads while no write is pending, the compactor's timer. Nothing
    // is lost by not closing: an acknowledged append is fsync'd, the kernel drops the lock.
    const idle = host('idle', 'idle-1');
    await idle.says('open ');
    const stillRunning = new Promise((r) => setTimeout(r, 10_000, 'still running after 10 s'));
    expect(await Promise.race([idle.exited, stillRunning])).toBe(0);
    const engine = await openEmbedded({ dataDir: dir, env: {} });
    try {
      expect((await engine.client.getStream('idle-1')).seq).toBe(1);
    } finally {
      await engine.close();
    }
  });
});
