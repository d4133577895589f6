import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { durableWriterStats } from '../../shared/adapters/local/durable-writer.js';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';

/**
 * What the embedded SQLite files hold on disk (record-codec.ts, object-codec.ts,
 * durable-writer-thread.mjs): record bodies without their key and DEFLATEd, objects DEFLATEd
 * when that is smaller, 16 KiB record pages, and pages freed by deletions given back to the
 * file system. Asserted on page counts and file sizes, read after the stores closed.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-size-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Waits until the writer's threads closed their connections (their answers come in order). */
const drained = () => durableWriterStats();

const pages = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return {
      pageSize: Number(db.pragma('page_size', { simple: true })),
      pages: Number(db.pragma('page_count', { simple: true })),
      free: Number(db.pragma('freelist_count', { simple: true })),
      autoVacuum: Number(db.pragma('auto_vacuum', { simple: true })),
    };
  } finally {
    db.close();
  }
};

/** A message-like text: compressible, different for each i. */
const message = (i: number) =>
  `${JSON.stringify({ lc: 1, type: 'constructor', id: ['langchain_core', 'messages', 'AIMessage'] })} ${i}: ${'the agent weighs its next tool call. '.repeat(8)}`;

describe('records.sqlite on disk', () => {
  it('stores bodies without their key, compressed, on 16 KiB pages; reads and updates them', async () => {
    const path = join(dir, 'records.sqlite');
    const records = new LocalRecordStore({ path });
    const items = Array.from({ length: 50 }, (_, i) => ({
      pk: `t#acme#s#run-${i % 3}`,
      sk: `pw#c${i}`,
      valueJson: message(i),
    }));
    for (const item of items) await records.put(item, { conditions: [{ op: 'notExists' }] });
    await records.update(items[0] as never, { set: { seen: true } });
    for (const item of items.slice(1)) expect(await records.get(item)).toEqual(item);
    expect(await records.get(items[0] as never)).toEqual({ ...items[0], seen: true });
    const page = await records.query('t#acme#s#run-1', { skPrefix: 'pw#' });
    expect(page.items).toEqual(
      items.filter((_, i) => i % 3 === 1).sort((a, b) => (a.sk < b.sk ? -1 : 1)),
    );
    records.close();
    await drained();
    const db = new Database(path, { readonly: true });
    const rows = db.prepare('SELECT pk, sk, body FROM items').all() as Array<{ body: unknown }>;
    db.close();
    for (const row of rows) {
      expect(Buffer.isBuffer(row.body)).toBe(true);
      expect((row.body as Buffer).length).toBeLessThan(message(0).length / 2);
    }
    expect(pages(path)).toMatchObject({ pageSize: 16384, autoVacuum: 2 });
  });

  it('reads and updates rows written by the layout before (the whole item as JSON text)', async () => {
    const path = join(dir, 'old.sqlite');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec(`CREATE TABLE items (pk TEXT NOT NULL, sk TEXT NOT NULL, ttl INTEGER,
      body TEXT NOT NULL, PRIMARY KEY (pk, sk)) WITHOUT ROWID`);
    const old = { pk: 't#a#s#x', sk: 'label#c1', seq: 3, valueJson: message(1) };
    db.prepare('INSERT INTO items VALUES (?, ?, NULL, ?)').run(old.pk, old.sk, JSON.stringify(old));
    db.close();
    const records = new LocalRecordStore({ path });
    expect(await records.get(old)).toEqual(old);
    await records.update(
      old,
      { set: { seq: 4 } },
      { conditions: [{ op: 'eq', attr: 'seq', value: 3 }] },
    );
    expect(await records.get(old)).toEqual({ ...old, seq: 4 });
    records.close();
    await drained();
    expect(pages(path).pageSize).toBe(4096); // an existing file keeps its pages
  });

  it('gives the pages of purged records back to the file system', async () => {
    const path = join(dir, 'records.sqlite');
    let now = 1_000_000;
    const records = new LocalRecordStore({ path, clock: { now: () => now } });
    const noise = (i: number) => randomBytes(600).toString('hex') + i; // incompressible
    for (let i = 0; i < 1500; i++) {
      await records.put({ pk: `t#a#idem#${i}`, sk: 'idem', body: noise(i), ttl: 2000 });
    }
    await records.put({ pk: 'keep', sk: 'keep', v: 1 });
    const full = pages(path);
    now = 3_000_000;
    expect(await records.purgeExpired()).toBe(1500); // on the writer's thread, serving
    await records.put({ pk: 'keep', sk: 'more', v: 2 });
    expect(await records.get({ pk: 'keep', sk: 'keep' })).toMatchObject({ v: 1 });
    records.close();
    await drained();
    expect(statSync(path).size).toBeLessThan((full.pages * full.pageSize) / 4);
    const after = pages(path);
    expect(after.free * after.pageSize).toBeLessThan(256 * 1024);
    expect(after.pages).toBeLessThan(full.pages / 4);
  });
});

describe('objects.sqlite on disk', () => {
  it('stores compressible objects DEFLATEd and answers their own bytes, size and etag', async () => {
    const objects = new LocalObjectStore({ dir });
    const body = new TextEncoder().encode(
      Array.from({ length: 200 }, (_, i) => message(i)).join('\n'),
    );
    const noise = randomBytes(4096);
    const put = await objects.putIfAbsent('t/a/s/x/seg/1', body);
    await objects.putIfAbsent('t/a/s/x/tiles/1', noise);
    expect(put.etag).toBe(createHash('sha256').update(body).digest('hex'));
    expect(Buffer.from((await objects.get('t/a/s/x/seg/1'))?.body ?? []).equals(body)).toBe(true);
    expect(Buffer.from((await objects.get('t/a/s/x/tiles/1'))?.body ?? []).equals(noise)).toBe(
      true,
    );
    expect(await objects.head('t/a/s/x/seg/1')).toEqual({
      key: 't/a/s/x/seg/1',
      etag: put.etag,
      size: body.length,
    });
    expect((await objects.list('t/a/')).items.map((i) => i.size)).toEqual([
      body.length,
      noise.length,
    ]);
    // The same bytes again are an earlier attempt; other bytes a conflict.
    expect(await objects.putIfAbsent('t/a/s/x/seg/1', body)).toEqual({
      etag: put.etag,
      created: false,
    });
    await expect(objects.putIfAbsent('t/a/s/x/seg/1', noise)).rejects.toThrow(/other bytes/);
    objects.close();
    await drained();
    const db = new Database(join(dir, 'objects.sqlite'), { readonly: true });
    const stored = db.prepare('SELECT key, length(body) n, size FROM objects ORDER BY key').all();
    db.close();
    expect(stored).toEqual([
      { key: 't/a/s/x/seg/1', n: expect.any(Number), size: body.length },
      { key: 't/a/s/x/tiles/1', n: noise.length, size: noise.length },
    ]);
    expect((stored[0] as { n: number }).n).toBeLessThan(body.length / 10);
  });

  it('answers the stored bytes of a compressed row changed on disk (verification names them)', async () => {
    const objects = new LocalObjectStore({ dir });
    const body = new TextEncoder().encode(message(7).repeat(20));
    await objects.putIfAbsent('t/a/s/x/seg/1', body);
    objects.close();
    await drained();
    const db = new Database(join(dir, 'objects.sqlite'));
    const row = db.prepare('SELECT body FROM objects').get() as { body: Buffer };
    const changed = Buffer.from(row.body);
    const at = Math.floor(changed.length / 2);
    changed[at] = (changed[at] ?? 0) ^ 0x01;
    db.prepare('UPDATE objects SET body = ?').run(changed);
    db.close();
    const again = new LocalObjectStore({ dir });
    const got = await again.get('t/a/s/x/seg/1');
    expect(Buffer.from(got?.body ?? []).equals(body)).toBe(false);
    expect(
      createHash('sha256')
        .update(got?.body ?? new Uint8Array())
        .digest('hex'),
    ).not.toBe(got?.etag);
    again.close();
  });

  it('gives the pages of deleted objects back to the file system', async () => {
    const objects = new LocalObjectStore({ dir });
    const keys = Array.from({ length: 300 }, (_, i) => `t/a/s/x/seg/${String(i).padStart(4, '0')}`);
    for (const key of keys) await objects.putIfAbsent(key, randomBytes(8192));
    await objects.putIfAbsent('t/a/s/x/keep', randomBytes(8192));
    const path = join(dir, 'objects.sqlite');
    const full = pages(path);
    for (const key of keys) await objects.delete(key);
    expect((await objects.get('t/a/s/x/keep'))?.size).toBe(8192);
    objects.close();
    await drained();
    const after = pages(path);
    expect(after.autoVacuum).toBe(2);
    expect(after.free * after.pageSize).toBeLessThan(256 * 1024);
    expect(after.pages).toBeLessThan(full.pages / 4);
    expect(statSync(path).size).toBeLessThan((full.pages * full.pageSize) / 4);
  });

  describe('closing a store', () => {
    it('gives back the free pages too few to vacuum while serving', async () => {
      const objects = new LocalObjectStore({ dir });
      for (let i = 0; i < 40; i++) await objects.putIfAbsent(`t/a/k/${i}`, randomBytes(8192));
      for (let i = 0; i < 10; i++) await objects.delete(`t/a/k/${i}`);
      const path = join(dir, 'objects.sqlite');
      const serving = pages(path);
      expect(serving.free).toBeGreaterThan(0); // under the serving threshold: still free
      objects.close();
      await drained();
      const after = pages(path);
      expect(after.free).toBe(0);
      expect(after.pages).toBeLessThan(serving.pages);
    });
  });
});
