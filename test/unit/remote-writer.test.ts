import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DurableWrite } from '../../shared/adapters/local/durable-writer.js';
import { RECORD_WRITES } from '../../shared/adapters/local/local-record-store.js';
import { type LocalStores, openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { OBJECT_WRITES } from '../../shared/adapters/local/objects-db.js';
import {
  type Batch,
  RemoteWriter,
  type WriteRequest,
  WriteServer,
} from '../../shared/adapters/local/remote-writer.js';
import {
  ConflictError,
  PayloadTooLargeError,
  UnavailableError,
} from '../../shared/domain/errors.js';

/**
 * The multi-process server's hand-off (remote-writer.ts) in one process: a worker's stores
 * (read-only, writes sent) over the owner's WriteServer, the IPC channel replaced by a call
 * (structuredClone, as the cluster's 'advanced' serialization copies). The processes
 * themselves are tested in test/e2e/multi-process-crash.test.ts.
 */

const enc = new TextEncoder();

describe('RemoteWriter', () => {
  const dirs: string[] = [];
  const opened: Array<{ close(): void }> = [];
  afterEach(() => {
    for (const o of opened.splice(0).reverse()) o.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const setUp = (options: { timeoutMs?: number; maxWriteBytes?: number; drop?: boolean } = {}) => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-remote-'));
    dirs.push(dir);
    const owner = openLocalStores(dir);
    opened.push(owner.objects, owner.records);
    const server = new WriteServer(owner.objects.path, {
      objects: OBJECT_WRITES,
      records: RECORD_WRITES,
    });
    opened.push(server);
    const sent: Array<WriteRequest | Batch<WriteRequest>> = [];
    const answer = (reply: unknown) => remote.receive(structuredClone(reply));
    const remote: RemoteWriter = new RemoteWriter(
      (message) => {
        sent.push(message);
        if (options.drop) return;
        server.handle(structuredClone(message), answer);
      },
      { timeoutMs: options.timeoutMs ?? 10_000, maxWriteBytes: options.maxWriteBytes ?? 1 << 20 },
    );
    const worker: LocalStores = openLocalStores(dir, { remote });
    opened.push(worker.objects, worker.records);
    return { owner, worker, remote, sent };
  };

  describe('a worker store', () => {
    it('writes through the owner, and the owner reads what it wrote', async () => {
      const { owner, worker } = setUp();
      await worker.objects.putIfAbsent('a/1', enc.encode('one'));
      await worker.records.put({ pk: 'p', sk: 's', v: 1 }, { conditions: [{ op: 'notExists' }] });
      expect((await owner.objects.get('a/1'))?.body).toEqual(enc.encode('one'));
      expect(await owner.records.get({ pk: 'p', sk: 's' })).toMatchObject({ v: 1 });
    });

    it('refuses a conditional write that lost to another writer with ConflictError and what is stored', async () => {
      const { owner, worker } = setUp();
      await owner.objects.putIfAbsent('a/1', enc.encode('theirs'));
      await expect(worker.objects.putIfAbsent('a/1', enc.encode('mine'))).rejects.toBeInstanceOf(
        ConflictError,
      );
      await owner.records.put({ pk: 'p', sk: 's', v: 1 });
      const refused = await worker.records
        .transact([
          { kind: 'put', item: { pk: 'p', sk: 't', v: 2 } },
          {
            kind: 'update',
            key: { pk: 'p', sk: 's' },
            update: { set: { v: 3 } },
            conditions: [{ op: 'eq', attr: 'v', value: 2 }],
          },
        ])
        .catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ConflictError);
      expect(refused).toMatchObject({ index: 1, current: { v: 1 } });
      expect(await owner.records.get({ pk: 'p', sk: 't' })).toBeUndefined();
    });
  });

  // Random bytes: the store compresses what it can (object-codec.ts).
  it('refuses a write larger than the bound before sending it (413)', async () => {
    const { worker, sent } = setUp({ maxWriteBytes: 1024 });
    await expect(worker.objects.putIfAbsent('big', randomBytes(4096))).rejects.toBeInstanceOf(
      PayloadTooLargeError,
    );
    expect(sent).toHaveLength(0);
  });

  it('answers ErrUnavailable when no reply comes in time, having written nothing itself', async () => {
    const { owner, worker, sent } = setUp({ drop: true, timeoutMs: 200 });
    await expect(worker.records.put({ pk: 'p', sk: 's', v: 1 })).rejects.toBeInstanceOf(
      UnavailableError,
    );
    expect(sent).toHaveLength(1);
    expect(await owner.records.get({ pk: 'p', sk: 's' })).toBeUndefined();
  });

  it('sends the writes of one turn as one message, each answered', async () => {
    const { owner, worker, sent } = setUp();
    await Promise.all([
      worker.objects.putIfAbsent('b/1', enc.encode('1')),
      worker.objects.putIfAbsent('b/2', enc.encode('2')),
      worker.records.put({ pk: 'p', sk: 'x', v: 1 }),
    ]);
    expect(sent[0]).toMatchObject({ hefesto: 'batch', items: [{}, {}, {}] });
    expect((await owner.objects.get('b/2'))?.body).toEqual(enc.encode('2'));
    expect(await owner.records.get({ pk: 'p', sk: 'x' })).toMatchObject({ v: 1 });
  });

  it('refuses every waiting and every later write once the writer is gone', async () => {
    const { remote } = setUp({ drop: true });
    const write: DurableWrite = { checks: [], writes: [['purge', [0]]] };
    const waiting = remote.request('records', write);
    expect(remote.waiting).toBe(1);
    remote.lost();
    await expect(waiting).rejects.toBeInstanceOf(UnavailableError);
    await expect(remote.request('records', write)).rejects.toBeInstanceOf(UnavailableError);
    expect(remote.waiting).toBe(0);
  });
});
