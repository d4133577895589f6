import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { DataDirInUseError, UnavailableError } from '../../shared/domain/errors.js';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';

/**
 * The data directory lock (dir-lock.ts): held by the kernel for as long as its holder lives,
 * whatever pid anything names. The server-level cases (SIGKILL then restart while the dead
 * server is a zombie, a fresh PID namespace, two servers) are in test/e2e/dir-lock.test.ts.
 */

/** A child that takes the lock of the directory it is given and holds it until killed. */
const HOLDER = `
  import { LocalObjectStore } from './shared/adapters/local/local-object-store.ts';
  new LocalObjectStore({ dir: process.argv[2] });
  process.stdout.write('held\\n');
  setInterval(() => {}, 1000);`;

/** A child that tries the lock once: exit 0 if it got it, 3 (and the message) if refused. */
const TRIER = `
  import { LocalObjectStore } from './shared/adapters/local/local-object-store.ts';
  try { new LocalObjectStore({ dir: process.argv[2] }); process.exit(0); }
  catch (err) { process.stdout.write(err.message); process.exit(3); }`;

let dir: string;
const children: ChildProcess[] = [];
const open: LocalObjectStore[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-lock-'));
});
afterAll(removeBundledScripts);
afterEach(() => {
  for (const store of open.splice(0)) store.close();
  for (const child of children.splice(0)) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const openStore = () => {
  const store = new LocalObjectStore({ dir });
  open.push(store);
  return store;
};

const refusal = (): Error => {
  try {
    openStore();
  } catch (err) {
    return err as Error;
  }
  throw new Error('the store opened');
};

/** Another process holding the lock of `dir`; resolves once it holds it. */
const holdInChild = async (): Promise<ChildProcess> => {
  const child = spawn(process.execPath, [await bundledScript(HOLDER), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
};

/** Whether another process, trying now, is refused the lock of `dir`. */
const refusedToChild = async (): Promise<boolean> => {
  const run = spawnSync(process.execPath, [await bundledScript(TRIER), dir]);
  if (run.status !== 0 && run.status !== 3) throw new Error(run.stderr.toString());
  return run.status === 3 && run.stdout.toString().includes('is in use by another Hefesto server');
};

/** A pid that no process has any more. */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

describe('data directory lock', () => {
  describe('a live holder', () => {
    it('refuses a second store of this process with ErrDataDirInUse, naming this pid', () => {
      openStore();
      const err = refusal();
      expect(err).toBeInstanceOf(DataDirInUseError);
      expect(err).toMatchObject({ code: 'ErrDataDirInUse', dir, pid: process.pid });
      expect(err.message).toBe(
        `data dir ${dir} is in use by another Hefesto server (pid ${process.pid}): stop it, ` +
          'or give this one another HEFESTO_DATA_DIR',
      );
    });

    it('keeps holding it after refusing a second store of this process', async () => {
      // SQLite defers closing the refused connection's descriptor: closing it would drop
      // this process's fcntl locks on the file.
      openStore();
      refusal();
      expect(await refusedToChild()).toBe(true);
    });

    it('refuses while another process holds it, and opens once that process is killed', async () => {
      const holder = await holdInChild();
      expect(refusal().message).toContain(`in use by another Hefesto server (pid ${holder.pid})`);

      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
      openStore();
    });

    it('is released by close, for this process or another', async () => {
      openStore().close();
      open.pop();
      const holder = await holdInChild();
      expect(holder.pid).toBeGreaterThan(0);
    });
  });

  describe('the LOCK text file of earlier versions', () => {
    it('does not stop a start when it names our own pid (a container restarted us with it)', async () => {
      writeFileSync(join(dir, 'LOCK'), `${process.pid}\n`);
      await openStore().putIfAbsent('k', new Uint8Array([1]));
    });

    it('does not stop a start when it names a process that has exited', () => {
      writeFileSync(join(dir, 'LOCK'), `${deadPid()}\n`);
      openStore();
    });

    it('does not stop a start when this version wrote it, whatever live pid it names', async () => {
      // A holder of this version killed; its pid since taken by an unrelated live process.
      const unrelated = spawn('sleep', ['30']);
      children.push(unrelated);
      writeFileSync(
        join(dir, 'LOCK'),
        `${unrelated.pid}\nthe lock is LOCK.sqlite; this pid is for earlier versions\n`,
      );
      openStore();
    });

    it('refuses to start when, without that note, it names another live process', () => {
      // An older server may be running: migrating its directory under it would lose writes.
      const other = spawn('sleep', ['30']);
      children.push(other);
      writeFileSync(join(dir, 'LOCK'), `${other.pid}\n`);
      const err = refusal();
      expect(err).toBeInstanceOf(UnavailableError);
      expect(err.message).toContain(`names process ${other.pid}, which is running`);
      expect(err.message).toContain(`delete ${join(dir, 'LOCK')}`);
      expect(existsSync(join(dir, 'objects'))).toBe(false);
    });

    it('holds the holder pid for older versions while open, and is removed on close', () => {
      const store = openStore();
      expect(Number.parseInt(readFileSync(join(dir, 'LOCK'), 'utf8'), 10)).toBe(process.pid);
      store.close();
      open.pop();
      expect(existsSync(join(dir, 'LOCK'))).toBe(false);
      expect(existsSync(join(dir, 'LOCK.sqlite'))).toBe(true);
    });
  });
});
