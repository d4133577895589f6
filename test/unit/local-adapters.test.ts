import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { ConflictError, UnavailableError } from '../../shared/domain/errors.js';
import type { Clock } from '../../shared/ports/clock.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

let dir: string;
const open: Array<{ close(): void }> = [];
const track = <T extends { close(): void }>(store: T): T => {
  open.push(store);
  return store;
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-local-unit-'));
});
afterEach(() => {
  for (const store of open.splice(0)) store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('LocalObjectStore', () => {
  describe('reopen', () => {
    it('keeps objects across close and a new instance on the same dir', async () => {
      const first = new LocalObjectStore({ dir });
      const put = await first.putIfAbsent('ledger/s1/000001.seg', bytes('events'));
      first.close();

      const second = track(new LocalObjectStore({ dir }));
      const got = await second.get('ledger/s1/000001.seg');
      expect(text(got?.body)).toBe('events');
      expect(got?.etag).toBe(put.etag);
    });

    it('refuses calls after close', async () => {
      const store = new LocalObjectStore({ dir });
      store.close();
      await expect(store.get('k')).rejects.toBeInstanceOf(UnavailableError);
    });
  });

  describe('files', () => {
    it('keeps every object in objects.sqlite: no file per object, no temp files', async () => {
      const store = track(new LocalObjectStore({ dir }));
      const first = await store.putIfAbsent('k', bytes('v1'));
      await store.putIfAbsent('k', bytes('other')).catch(() => undefined);
      await store.putIfMatch('k', bytes('v2'), first.etag);
      await store.putIfMatch('k', bytes('v3'), first.etag).catch(() => undefined);
      await store.putIfAbsent('a/b/c', bytes('deep'));
      const names = readdirSync(dir).filter((n) => !/^objects\.sqlite-(wal|shm)$/.test(n));
      expect(names.sort()).toEqual(['LAYOUT', 'LOCK', 'LOCK.sqlite', 'objects.sqlite']);
    });

    it('removes the temp files a layout-2 server left when it opens', () => {
      mkdirSync(join(dir, 'tmp'), { recursive: true });
      writeFileSync(join(dir, 'tmp', '4242-1'), 'half written');
      writeFileSync(join(dir, 'LAYOUT'), '2\n');
      track(new LocalObjectStore({ dir }));
      expect(existsSync(join(dir, 'tmp'))).toBe(false);
    });
  });

  describe('keys a file system cannot hold as plain paths', () => {
    const keys = [
      'a',
      'a/b',
      'a//b',
      'a/',
      '/lead',
      `long/${'x'.repeat(300)}`,
      `${'y'.repeat(200)}/z`,
      'k'.repeat(1024),
      `dots/${'d'.repeat(199)}..`,
    ];

    it('stores each key apart and lists them all in byte order', async () => {
      const store = track(new LocalObjectStore({ dir }));
      for (const key of keys) await store.putIfAbsent(key, bytes(key));
      for (const key of keys) expect(text((await store.get(key))?.body)).toBe(key);
      const listed = (await store.list('')).items.map((i) => i.key);
      expect(listed).toEqual([...keys].sort());
      expect((await store.list('a/')).items.map((i) => i.key)).toEqual(['a/', 'a//b', 'a/b']);
    });

    it('finds no keys under a prefix no key can have', async () => {
      const store = track(new LocalObjectStore({ dir }));
      await store.putIfAbsent('a', bytes('v'));
      expect(await store.list('../')).toEqual({ items: [] });
      expect(await store.list('a b')).toEqual({ items: [] });
    });

    it('forgets a deleted object in get, head and list', async () => {
      const store = track(new LocalObjectStore({ dir }));
      await store.putIfAbsent('x/y/z', bytes('v'));
      await store.putIfAbsent('x/y', bytes('w'));
      await store.delete('x/y/z');
      expect(await store.get('x/y/z')).toBeUndefined();
      expect(await store.head('x/y/z')).toBeUndefined();
      expect((await store.list('x/')).items.map((i) => i.key)).toEqual(['x/y']);
    });
  });
});

describe('LocalRecordStore', () => {
  const path = () => join(dir, 'db', 'records.db');

  describe('reopen', () => {
    it('keeps items across close and a new instance on the same file', async () => {
      const first = new LocalRecordStore({ path: path() });
      await first.put({ pk: 'p', sk: 's', seq: 7, nested: { a: [1, 2] } });
      first.close();

      const second = track(new LocalRecordStore({ path: path() }));
      expect(await second.get({ pk: 'p', sk: 's' })).toEqual({
        pk: 'p',
        sk: 's',
        seq: 7,
        nested: { a: [1, 2] },
      });
    });
  });

  describe('ttl', () => {
    const at = (ms: number) => {
      const clock: Clock & { ms: number } = { ms, now: () => clock.ms };
      return clock;
    };

    it('hides an item from get and query once the clock passes its ttl', async () => {
      const clock = at(1_000_000);
      const store = track(new LocalRecordStore({ path: path(), clock }));
      await store.put({ pk: 'p', sk: 'lease', ttl: 1_060 });
      expect(await store.get({ pk: 'p', sk: 'lease' })).toBeDefined();

      clock.ms = 1_060_000;
      expect(await store.get({ pk: 'p', sk: 'lease' })).toBeUndefined();
      expect((await store.query('p')).items).toEqual([]);
    });

    it('lets conditions see an expired item until it is purged', async () => {
      const clock = at(1_000_000);
      const store = track(new LocalRecordStore({ path: path(), clock }));
      await store.put({ pk: 'p', sk: 'idem', ttl: 1_010 });
      clock.ms = 2_000_000;

      const err = await store
        .put({ pk: 'p', sk: 'idem', v: 2 }, { conditions: [{ op: 'notExists' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConflictError);
      expect((err as ConflictError).current).toEqual({ pk: 'p', sk: 'idem', ttl: 1_010 });

      expect(await store.purgeExpired()).toBe(1);
      await store.put({ pk: 'p', sk: 'idem', v: 2 }, { conditions: [{ op: 'notExists' }] });
    });
  });

  describe('query', () => {
    it('takes a prefix with LIKE and GLOB wildcards literally', async () => {
      const store = track(new LocalRecordStore({ path: path() }));
      for (const sk of ['a%1', 'a_2', 'a*3', 'ab4', 'aé5']) await store.put({ pk: 'q', sk });
      expect((await store.query('q', { skPrefix: 'a%' })).items.map((i) => i.sk)).toEqual(['a%1']);
      expect((await store.query('q', { skPrefix: 'a_' })).items.map((i) => i.sk)).toEqual(['a_2']);
      expect((await store.query('q', { skPrefix: 'aé' })).items.map((i) => i.sk)).toEqual(['aé5']);
    });
  });
});
