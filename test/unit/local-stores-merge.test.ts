import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEGACY_RECORDS_DB, openLocalStores } from '../../shared/adapters/local/local-stores.js';

/**
 * A data directory made before objects and records shared one file has a `records.sqlite`:
 * opening it moves the records into `objects.sqlite` (local-stores.ts, steps 1 and 2). A
 * process killed (SIGKILL) inside the move's transaction, or after its commit before the old
 * file is removed, leaves a directory the next open finishes: every record there once.
 */

const ITEMS = 300;
const root = process.cwd();

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-merge-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const node = (script: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });

/** A data directory as the code before wrote it: objects.sqlite and records.sqlite. */
const legacyDataDir = () => {
  const made = node(`
    const { LocalObjectStore } = await import('${root}/shared/adapters/local/local-object-store.ts');
    const { LocalRecordStore } = await import('${root}/shared/adapters/local/local-record-store.ts');
    const objects = new LocalObjectStore({ dir: '${dir}' });
    const records = new LocalRecordStore({ path: '${dir}/records.sqlite' });
    await objects.putIfAbsent('t/a/s/x/seg/1', new Uint8Array([1, 2, 3]));
    await Promise.all(Array.from({ length: ${ITEMS} }, (_, i) =>
      records.put({ pk: 'p', sk: 's' + String(i).padStart(4, '0'), v: i })));
    // Killed with its writes in the WAL (never folded back into records.sqlite).
    process.kill(process.pid, 'SIGKILL');`);
  expect(made.signal).toBe('SIGKILL');
  expect(existsSync(join(dir, `${LEGACY_RECORDS_DB}-wal`))).toBe(true);
};

/** Opens the directory in a child killed at `step` of the move. */
const openKilledAt = (step: 'copied' | 'committed') => {
  const run = node(`
    const { mergeTestHooks, openLocalStores } = await import('${root}/shared/adapters/local/local-stores.ts');
    mergeTestHooks.step = (s) => { if (s === '${step}') process.kill(process.pid, 'SIGKILL'); };
    openLocalStores('${dir}');
    process.stdout.write('not killed');`);
  expect(run.signal, run.stderr + run.stdout).toBe('SIGKILL');
};

const expectEveryRecordOnce = async () => {
  const { objects, records } = openLocalStores(dir);
  try {
    const page = await records.query('p', { limit: 1000 });
    expect(page.items.map((i) => i.v)).toEqual(Array.from({ length: ITEMS }, (_, i) => i));
    expect((await objects.get('t/a/s/x/seg/1'))?.body).toEqual(new Uint8Array([1, 2, 3]));
  } finally {
    records.close();
    objects.close();
  }
  for (const suffix of ['', '-wal', '-shm']) {
    expect(existsSync(join(dir, `${LEGACY_RECORDS_DB}${suffix}`)), suffix).toBe(false);
  }
};

describe('opening a data directory that has a records.sqlite', () => {
  it('moves every record into objects.sqlite and removes records.sqlite', async () => {
    legacyDataDir();
    await expectEveryRecordOnce();
  });

  it.each(['copied', 'committed'] as const)('finishes a move killed at %s', async (step) => {
    legacyDataDir();
    openKilledAt(step);
    await expectEveryRecordOnce();
  });

  it('removes a records.sqlite made after the move, never moving it over the records', async () => {
    legacyDataDir();
    await expectEveryRecordOnce();
    const stray = node(`
      const { LocalRecordStore } = await import('${root}/shared/adapters/local/local-record-store.ts');
      const records = new LocalRecordStore({ path: '${dir}/records.sqlite' });
      await records.put({ pk: 'p', sk: 'stray' });
      records.close();`);
    expect(stray.status, stray.stderr).toBe(0);
    await expectEveryRecordOnce();
  });
});
