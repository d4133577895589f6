import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import type { LayoutStep } from '../../shared/adapters/local/object-layout.js';
import { keyToPath } from '../../shared/adapters/local/object-paths.js';
import { keyToPathV1 } from '../../shared/adapters/local/object-paths-v1.js';
import { UnavailableError } from '../../shared/domain/errors.js';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';

/**
 * Moving a data directory from object layout 1 (no LAYOUT file) or 2 (a file per object) to
 * layout 3 (objects.sqlite) on open (object-layout.ts): every object readable with the same
 * bytes and etag afterwards, and a crash at any step, by SIGKILL in a child process, finished
 * by the next open. The same on directories written by the old servers themselves:
 * test/e2e/layout-v1-upgrade.test.ts.
 */

const KEYS = [
  't/TENA/s/run-1/seg/0000000000000001',
  't/tenA/s/run-1/seg/0000000000000001',
  't/tenA./s/Run-1/seg/0000000000000001',
  't/tena/s/run:1/snap/0000000000000003-ab',
  't/CON/s/nul/seg/0000000000000002',
  't/d/s/a./seg/1',
  'a//b/',
  `long/${'X'.repeat(300)}`,
  'k',
  'k/k',
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-layout-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const body = (key: string) => new TextEncoder().encode(`bytes of ${key}`);
const etag = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A data directory as layout 1 wrote it: files at keyToPathV1, no LAYOUT. */
const writeLayout1 = (keys: readonly string[]) => {
  for (const key of keys) {
    const path = join(dir, 'objects', ...keyToPathV1(key));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, body(key));
  }
};

/** A data directory as layout 2 wrote it: files at keyToPath, LAYOUT = 2. */
const writeLayout2 = (keys: readonly string[]) => {
  for (const key of keys) {
    const path = join(dir, 'objects', ...keyToPath(key));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, body(key));
  }
  writeFileSync(join(dir, 'LAYOUT'), '2\n');
};

/** Every file under `root`, as relative paths. */
const tree = (root: string): string[] =>
  readdirSync(root).flatMap((name) => {
    const path = join(root, name);
    return statSync(path).isDirectory()
      ? tree(path).map((p) => join(name, p))
      : [relative(root, path)];
  });

/** Opens the directory and checks it holds exactly `keys`, in layout 3 and nothing else. */
const expectMigrated = async (keys: readonly string[]) => {
  const store = new LocalObjectStore({ dir });
  try {
    for (const key of keys) {
      const got = await store.get(key);
      expect(got?.body, key).toEqual(body(key));
      expect(got?.etag).toBe(etag(body(key)));
    }
    expect((await store.list('')).items.map((i) => i.key)).toEqual([...keys].sort());
    expect(readFileSync(join(dir, 'LAYOUT'), 'utf8')).toBe('3\n');
    for (const left of ['objects', 'objects.next', 'objects.v1', 'objects.sqlite.next', 'tmp']) {
      expect(existsSync(join(dir, left)), left).toBe(false);
    }
  } finally {
    store.close();
  }
};

/**
 * The migration in a child process that kills itself with SIGKILL at the CRASH_AFTER-th
 * CRASH_STEP (bundled once: test/support/bundled-script.ts).
 */
const CRASH_CHILD = `
  import { acquireDirLock } from './shared/adapters/local/dir-lock.ts';
  import { ensureLayout } from './shared/adapters/local/object-layout.ts';
  const { CRASH_DIR: dir = '', CRASH_STEP: at, CRASH_AFTER: after = '1' } = process.env;
  acquireDirLock(dir);
  let seen = 0;
  ensureLayout(dir, (step) => {
    if (step === at && ++seen < Number(after)) return;
    if (step === at) process.kill(process.pid, 'SIGKILL');
  });
  process.stdout.write('finished without reaching the step\\n');`;

afterAll(removeBundledScripts);

/** Runs the migration in a child process that kills itself with SIGKILL at `step`. */
const crashAt = async (step: LayoutStep, after = 1): Promise<void> => {
  const child = spawn(process.execPath, [await bundledScript(CRASH_CHILD)], {
    env: { ...process.env, CRASH_DIR: dir, CRASH_STEP: step, CRASH_AFTER: String(after) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const signal = await new Promise((resolve) => child.once('exit', (_code, sig) => resolve(sig)));
  expect(signal, out).toBe('SIGKILL');
};

describe('object layout migration', () => {
  it('moves a layout-1 directory to layout 3 on open, every object as it was', async () => {
    writeLayout1(KEYS);
    const store = new LocalObjectStore({ dir });
    expect(store.layout).toEqual({ migrated: { from: 1, objects: KEYS.length } });
    store.close();
    await expectMigrated(KEYS);
  });

  it('does it for any set of keys', async () => {
    const partArb = fc.string({ unit: fc.constantFrom(...'aAzZ0.:*-_'.split('')), maxLength: 6 });
    const keyArb = fc
      .array(partArb, { minLength: 1, maxLength: 4 })
      .map((parts) => parts.join('/'))
      .filter((key) => /^(?!.*(?:^|\/)\.\.?(?:\/|$)).{1,200}$/.test(key));
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(keyArb, { minLength: 1, maxLength: 12 }), async (keys) => {
        rmSync(dir, { recursive: true, force: true });
        writeLayout1(keys);
        await expectMigrated(keys);
      }),
      { numRuns: 40, seed: 21 },
    );
  });

  it('moves a layout-2 directory to layout 3 on open, every object as it was', async () => {
    writeLayout2(KEYS);
    const store = new LocalObjectStore({ dir });
    expect(store.layout).toEqual({ migrated: { from: 2, objects: KEYS.length } });
    store.close();
    await expectMigrated(KEYS);
  });

  it('starts a new data directory at layout 3 and does not move it again', async () => {
    const first = new LocalObjectStore({ dir });
    expect(first.layout).toEqual({});
    expect(readFileSync(join(dir, 'LAYOUT'), 'utf8')).toBe('3\n');
    await first.putIfAbsent('t/A/x', body('t/A/x'));
    first.close();
    const second = new LocalObjectStore({ dir });
    expect(second.layout).toEqual({});
    second.close();
    await expectMigrated(['t/A/x']);
  });

  it('refuses a layout newer than it reads, touching nothing', () => {
    writeLayout1(['k']);
    writeFileSync(join(dir, 'LAYOUT'), '4\n');
    expect(() => new LocalObjectStore({ dir })).toThrow(UnavailableError);
    expect(() => new LocalObjectStore({ dir })).toThrow(/object layout 4, written by a newer/);
    expect(tree(join(dir, 'objects'))).toEqual([join(...keyToPathV1('k'))]);
  });

  describe('killed at any step, then opened again', () => {
    const steps: Array<[LayoutStep, number]> = [
      ['linked', 1],
      ['linked', 5],
      ['built', 1],
      ['committed', 1],
      ['moved-old', 1],
      ['moved-new', 1],
      ['copied', 1],
      ['copied', 7],
      ['db-built', 1],
      ['db-committed', 1],
      ['db-moved', 1],
    ];
    const beforeLayout2Commit = new Set<LayoutStep>(['linked', 'built']);

    it.each(steps)('finishes a move from layout 1 after a crash at %s (%i)', async (step, n) => {
      writeLayout1(KEYS);
      const before = tree(join(dir, 'objects')).sort();
      await crashAt(step, n);
      if (beforeLayout2Commit.has(step)) {
        // Before the commit point the layout-1 tree is untouched: older code could still read it.
        expect(existsSync(join(dir, 'LAYOUT'))).toBe(false);
        expect(tree(join(dir, 'objects')).sort()).toEqual(before);
      }
      await expectMigrated(KEYS);
    });

    it.each(
      steps.filter(([step]) => ['copied', 'db-built', 'db-committed', 'db-moved'].includes(step)),
    )('finishes a move from layout 2 after a crash at %s (%i)', async (step, n) => {
      writeLayout2(KEYS);
      const before = tree(join(dir, 'objects')).sort();
      await crashAt(step, n);
      if (step === 'copied' || step === 'db-built') {
        // Before its commit point the layout-2 tree is untouched: the server before could read it.
        expect(readFileSync(join(dir, 'LAYOUT'), 'utf8')).toBe('2\n');
        expect(tree(join(dir, 'objects')).sort()).toEqual(before);
      }
      await expectMigrated(KEYS);
    });

    it('finishes it after a crash at every step in turn', async () => {
      writeLayout1(KEYS);
      await crashAt('linked', 3);
      await crashAt('built');
      await crashAt('committed'); // a move started again, cut after its commit point
      await crashAt('moved-new'); // finishing it, cut again
      await crashAt('copied', 4); // the copy to layout 3, cut inside its transaction
      await crashAt('db-built');
      await crashAt('db-committed');
      await expectMigrated(KEYS);
    });
  });
});
