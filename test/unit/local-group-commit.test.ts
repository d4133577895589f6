import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { durableWriterStats } from '../../shared/adapters/local/durable-writer.js';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { ConflictError } from '../../shared/domain/errors.js';

/**
 * Group commit in the local adapters (durable-writer.ts): writes run on the writer's thread,
 * never on the event loop; the writes that arrive during a commit are committed together;
 * within such a batch a write whose check fails is answered alone. A connection of the test's
 * own holding SQLite's write lock stands for a commit in progress: while it holds it, the
 * writer waits (on its thread) and writes queue up behind it.
 */

const bytes = (s: string) => new TextEncoder().encode(s);

let dir: string;
const closers: Array<() => void> = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-group-commit-'));
});
afterEach(() => {
  for (const close of closers.splice(0)) close();
  rmSync(dir, { recursive: true, force: true });
});

/** Takes the write lock of database `path` from another connection, until `release()`. */
const holdWriteLock = (path: string) => {
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.exec('BEGIN IMMEDIATE');
  return {
    release: () => {
      db.exec('COMMIT');
      db.close();
    },
  };
};

const settled = <T>(promise: Promise<T>) => {
  const state = { done: false };
  promise.then(
    () => {
      state.done = true;
    },
    () => {
      state.done = true;
    },
  );
  return state;
};

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));

const openRecords = () => {
  const path = join(dir, 'records.sqlite');
  const store = new LocalRecordStore({ path, busyTimeoutMs: 20_000 });
  closers.push(() => store.close());
  return { store, path };
};

const openObjects = () => {
  const store = new LocalObjectStore({ dir: join(dir, 'data') });
  closers.push(() => store.close());
  return { store, path: join(dir, 'data', 'objects.sqlite') };
};

describe('LocalRecordStore writes', () => {
  it('leave the event loop free while a commit waits: reads and timers go on', async () => {
    const { store, path } = openRecords();
    await store.put({ pk: 'p', sk: 'a', v: 1 });
    const lock = holdWriteLock(path);
    const write = store.put({ pk: 'p', sk: 'b', v: 2 });
    const state = settled(write);
    await tick();
    expect(await store.get({ pk: 'p', sk: 'a' })).toEqual({ pk: 'p', sk: 'a', v: 1 });
    expect(state.done).toBe(false);
    lock.release();
    await write;
    expect(await store.get({ pk: 'p', sk: 'b' })).toEqual({ pk: 'p', sk: 'b', v: 2 });
  });

  it('commits the writes that queue up during a commit in one transaction', async () => {
    const { store, path } = openRecords();
    await store.put({ pk: 'p', sk: 'warm' });
    const lock = holdWriteLock(path);
    const before = await durableWriterStats();
    const writes = Array.from({ length: 16 }, (_, i) =>
      store.put({ pk: 'p', sk: `k${i}`, i }, { conditions: [{ op: 'notExists' }] }),
    );
    await tick();
    lock.release();
    await Promise.all(writes);
    const after = await durableWriterStats();
    expect(after.writes - before.writes).toBe(16);
    // The writer may take a few writes before it blocks on the lock (how many depends on how
    // fast its thread receives them: CI saw 3); every write that queues behind the lock then
    // lands in the next transaction, so 16 writes take at most 2 commits, one of 8 or more.
    expect(after.commits - before.commits).toBeLessThanOrEqual(2);
    expect(after.maxBatch).toBeGreaterThanOrEqual(8);
    for (let i = 0; i < 16; i++)
      expect(await store.get({ pk: 'p', sk: `k${i}` })).toMatchObject({ i });
  });

  it('answers a write whose item changed in its batch alone: the others land', async () => {
    const { store, path } = openRecords();
    // An append's commit: move the head (condition: still at seq 0), add the segment's index
    // record and the idempotency record, in one transaction.
    const commit = (stream: string, by: string) =>
      store.transact([
        {
          kind: 'update',
          key: { pk: stream, sk: 'head' },
          update: { set: { seq: 1, by } },
          conditions: [{ op: 'eq', attr: 'seq', value: 0 }],
        },
        { kind: 'put', item: { pk: stream, sk: 'seg#1', by }, conditions: [{ op: 'notExists' }] },
        { kind: 'put', item: { pk: stream, sk: `idem#${by}` }, conditions: [{ op: 'notExists' }] },
      ]);
    const streams = Array.from({ length: 8 }, (_, i) => `s${i}`);
    for (const s of ['h', ...streams]) await store.put({ pk: s, sk: 'head', seq: 0 });
    const lock = holdWriteLock(path);
    const before = await durableWriterStats();
    // Two commits decided on the same head (seq 0), and the commits of 8 other streams, all
    // in one batch: the second to be applied finds the head moved by the first.
    const racing = [commit('h', 'one'), commit('h', 'two')];
    const others = streams.map((s) => commit(s, 'w'));
    await tick();
    lock.release();
    const results = await Promise.allSettled(racing);
    await Promise.all(others);
    const after = await durableWriterStats();
    // one transaction for the batch (two if the first write was taken before the others came)
    expect(after.commits - before.commits).toBeLessThanOrEqual(2);
    const won = results.findIndex((r) => r.status === 'fulfilled');
    const lost = results[1 - won];
    expect(won).toBeGreaterThanOrEqual(0);
    expect(lost?.status).toBe('rejected');
    const err = (lost as PromiseRejectedResult).reason as ConflictError;
    expect(err).toBeInstanceOf(ConflictError);
    const [winner, loser] = won === 0 ? ['one', 'two'] : ['two', 'one'];
    expect(err.current).toMatchObject({ seq: 1, by: winner });
    expect(await store.get({ pk: 'h', sk: 'seg#1' })).toMatchObject({ by: winner });
    expect(await store.get({ pk: 'h', sk: `idem#${loser}` })).toBeUndefined();
    for (const s of streams) {
      expect((await store.query(s)).items.map((i) => i.sk)).toEqual(['head', 'idem#w', 'seg#1']);
      expect(await store.get({ pk: s, sk: 'head' })).toMatchObject({ seq: 1, by: 'w' });
    }
  });
});

describe('LocalObjectStore writes', () => {
  it('leave the event loop free while a commit waits: reads and timers go on', async () => {
    const { store, path } = openObjects();
    await store.putIfAbsent('a', bytes('one'));
    const lock = holdWriteLock(path);
    const write = store.putIfAbsent('b', bytes('two'));
    const state = settled(write);
    await tick();
    expect((await store.get('a'))?.body).toEqual(bytes('one'));
    expect(await store.head('b')).toBeUndefined();
    expect(state.done).toBe(false);
    lock.release();
    expect(await write).toMatchObject({ created: true });
    expect((await store.get('b'))?.body).toEqual(bytes('two'));
  });

  it('keeps create-only puts atomic within a batch: one of two racers wins', async () => {
    const { store, path } = openObjects();
    await store.putIfAbsent('warm', bytes('w'));
    const lock = holdWriteLock(path);
    const first = store.putIfAbsent('seg/1', bytes('mine'));
    const second = store.putIfAbsent('seg/1', bytes('theirs'));
    const same = store.putIfAbsent('seg/1', bytes('mine'));
    const others = Array.from({ length: 8 }, (_, i) => store.putIfAbsent(`o/${i}`, bytes(`${i}`)));
    await tick();
    lock.release();
    const [a, b, c] = await Promise.allSettled([first, second, same]);
    await Promise.all(others);
    // The first in the batch wins; the same bytes again is its retry, the others conflict.
    expect(a).toMatchObject({ status: 'fulfilled', value: { created: true } });
    expect(b.status).toBe('rejected');
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect(c).toMatchObject({ status: 'fulfilled', value: { created: false } });
    expect((await store.get('seg/1'))?.body).toEqual(bytes('mine'));
    expect((await store.list('o/')).items).toHaveLength(8);
  });
});

const hasStrace = spawnSync('strace', ['-V']).status === 0;

describe.runIf(hasStrace)('the fsync count', () => {
  it('is the number of fsyncs the process makes for its writes (strace)', () => {
    const root = process.cwd();
    const script = `
      const { LocalRecordStore } = await import('${root}/shared/adapters/local/local-record-store.ts');
      const { LocalObjectStore } = await import('${root}/shared/adapters/local/local-object-store.ts');
      const { durableWriterStats } = await import('${root}/shared/adapters/local/durable-writer.ts');
      const records = new LocalRecordStore({ path: '${dir}/records.sqlite' });
      const objects = new LocalObjectStore({ dir: '${dir}/data' });
      await records.put({ pk: 'warm', sk: 'x' });
      await objects.putIfAbsent('warm', new Uint8Array([1]));
      const before = await durableWriterStats();
      process.stderr.write('MARK\\n');
      for (let i = 0; i < 300; i++) {
        await records.put({ pk: 'p', sk: 's' + i, v: 'x'.repeat(300) });
        await objects.putIfAbsent('k/' + i, new Uint8Array(300));
      }
      await Promise.all(Array.from({ length: 64 }, (_, i) => records.put({ pk: 'q', sk: 's' + i })));
      const after = await durableWriterStats();
      process.stderr.write('MARK\\n');
      process.stdout.write(String(after.fsyncs - before.fsyncs));
      records.close();
      objects.close();`;
    const trace = join(dir, 'strace.out');
    const run = spawnSync(
      'strace',
      [
        '-f',
        '-e',
        'trace=fsync,fdatasync,write',
        '-e',
        'signal=none',
        '-o',
        trace,
        process.execPath,
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        script,
      ],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const lines = readFileSync(trace, 'utf8').split('\n');
    const marks = lines.flatMap((l, n) => (l.includes('MARK') ? [n] : []));
    const between = lines.slice(marks[0], marks[1]);
    const syncs = between.filter((l) => /\b(fsync|fdatasync)\(/.test(l) && !l.includes('resumed'));
    expect(syncs.length).toBe(Number(run.stdout));
    expect(syncs.length).toBeGreaterThan(600);
  }, 60_000);
});
