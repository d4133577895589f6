import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamPk } from '../../shared/chain/storage-keys.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * A putWrites call is one record transaction (pending-writes.ts): its writes' puts, the lease
 * guard and the label's check together; more only past what one transaction holds. Counted on
 * the real stores, through a wrapper that counts the record store's writes.
 */

const T = 'acme';
const S = 'lg.tx.';
const taskId = 'df6210ff-d439-50d8-999d-a8f385beac97';
const taskPath = '~__pregel_pull, model';

/** The record store, counting its write calls by kind; `loseReply` loses the next reply. */
const counting = (records: RecordStore) => {
  const calls = { transact: 0, put: 0, update: 0, delete: 0 };
  const faults = { loseReply: false };
  const counted =
    <A extends unknown[], R>(kind: keyof typeof calls, call: (...args: A) => R) =>
    (...args: A): R => {
      calls[kind]++;
      return call(...args);
    };
  const wrapped: RecordStore = {
    get: (k) => records.get(k),
    query: (pk, o) => records.query(pk, o),
    put: counted('put', (i, o) => records.put(i, o)),
    update: counted('update', (k, u, o) => records.update(k, u, o)),
    delete: counted('delete', (k, o) => records.delete(k, o)),
    transact: counted('transact', async (ops) => {
      await records.transact(ops);
      if (faults.loseReply) {
        faults.loseReply = false;
        throw new Error('reply lost');
      }
    }),
  };
  const reset = () => {
    for (const k of Object.keys(calls) as Array<keyof typeof calls>) calls[k] = 0;
  };
  return { wrapped, calls, faults, reset };
};

describe.each(allStores.filter((f) => f.enabled))('putWrites on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  let count: ReturnType<typeof counting>;
  const set = (path: string, value: unknown): DeltaOp => ({ op: 'set', path, value }) as DeltaOp;

  beforeEach(async () => {
    stores = await factory.make();
    count = counting(stores.records);
    world = compactionWorld({ ...stores, records: count.wrapped }, {}, manualClock());
    const head = await world.ledger.appender.readHead(T, S);
    await world.ledger.checkpoints.checkpoint({
      tenant: T,
      stream: S,
      ops: [set('/n', 1)],
      baseDigest: head.stateDigest,
      label: 'c1',
    });
    count.reset();
  });
  afterEach(() => stores.cleanup());

  const writes = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => ({ idx: i, channel: `ch${i}`, value: `${tag} ${i}` }));
  const put = (ws: ReturnType<typeof writes>) =>
    world.ledger.pendingWrites.put(T, S, 'c1', { taskId, taskPath, writes: ws });

  it('writes a call of several writes in one transaction', async () => {
    expect(await put(writes(4, 'first'))).toEqual({ written: 4 });
    expect(count.calls).toEqual({ transact: 1, put: 0, update: 0, delete: 0 });
    const listed = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(listed.map((w) => w.value)).toEqual(['first 0', 'first 1', 'first 2', 'first 3']);
  });

  it('keeps insert-once in the transaction: a retry adds only the writes not stored yet', async () => {
    await put(writes(2, 'first'));
    count.reset();
    // Retried with one more write and other values: idx 0 and 1 stay as first written.
    const again = [...writes(3, 'retry'), { idx: -1, channel: '__error__', value: 'last wins' }];
    expect(await put(again)).toEqual({ written: 2 });
    const listed = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(listed.map((w) => [w.idx, w.value])).toEqual([
      [-1, 'last wins'],
      [0, 'first 0'],
      [1, 'first 1'],
      [2, 'retry 2'],
    ]);
    // One transaction refused (idx 0 was there), then one without every write stored.
    expect(count.calls.transact).toBe(2);
    expect(count.calls.put + count.calls.update + count.calls.delete).toBe(0);
  });

  it('takes two transactions for a call past what one holds (100 writes)', async () => {
    expect(await put(writes(100, 'many'))).toEqual({ written: 100 });
    expect(count.calls.transact).toBe(2);
    const page = await stores.records.query(streamPk(T, S), { skPrefix: 'pw#', limit: 1000 });
    expect(page.items).toHaveLength(100);
  });

  it('retries a call of 98 writes whose reply was lost in one transaction, not one a write', async () => {
    count.faults.loseReply = true;
    await expect(put(writes(98, 'first'))).rejects.toThrow('reply lost');
    count.reset();
    expect(await put(writes(98, 'retry'))).toEqual({ written: 0 });
    // One refused (idx 0 stored), then the writes read: all stored, nothing left to send.
    expect(count.calls.transact).toBe(1);
    const listed = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(listed).toHaveLength(98);
    expect(listed.every((w) => String(w.value).startsWith('first '))).toBe(true);
  });

  it('retries a call half stored in two transactions, adding only the writes not stored', async () => {
    await put(writes(98, 'first').filter((w) => w.idx % 2 === 1));
    count.reset();
    expect(await put(writes(98, 'retry'))).toEqual({ written: 49 });
    expect(count.calls.transact).toBe(2);
    const listed = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(listed.map((w) => w.value)).toEqual(
      writes(98, '').map((w) => `${w.idx % 2 === 1 ? 'first' : 'retry'} ${w.idx}`),
    );
  });

  it('sizes transactions in UTF-8 bytes: 8 MB of CJK text (2.7 M UTF-16 units) takes three', async () => {
    // 40 writes of 68,000 CJK characters: 204 kB each in UTF-8, 8.2 MB together, over
    // DynamoDB's 4 MB for one transaction; in UTF-16 units they would fit one 3 MiB budget.
    const big = Array.from({ length: 40 }, (_, i) => ({
      idx: i,
      channel: `ch${i}`,
      value: `${i} ${'漢'.repeat(68_000)}`,
    }));
    expect(await put(big)).toEqual({ written: 40 });
    expect(count.calls.transact).toBe(3);
    const listed = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(listed.map((w) => w.value)).toEqual(big.map((w) => w.value));
  });
});
