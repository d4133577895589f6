import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamPk } from '../../shared/chain/storage-keys.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Pending-write keys (pending-writes.ts): 96 bits of a digest of (task path, task id) instead
 * of their hex, so a write's key is ~70 bytes, not ~200; `list` sorts in memory into
 * LangGraph's order, and still reads (and orders, and dedupes) records written under the old
 * key by the code before.
 */

const T = 'acme';
const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const oldSk = (label: string, path: string, id: string, idx: number) =>
  `pw#${label}#${hex(path)}#${hex(id)}#${String(idx + 2 ** 31).padStart(16, '0')}`;

describe.each(allStores.filter((f) => f.enabled))('pending-write keys on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const set = (path: string, value: unknown): DeltaOp => ({ op: 'set', path, value }) as DeltaOp;
  const label = async (tenant: string, stream: string, name: string) => {
    const head = await world.ledger.appender.readHead(tenant, stream);
    await world.ledger.checkpoints.checkpoint({
      tenant,
      stream,
      ops: [set('/n', name)],
      baseDigest: head.stateDigest,
      label: name,
    });
  };

  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, {}, manualClock());
  });
  afterEach(() => stores.cleanup());

  it('keys a write by a short digest of its task, per stream and tenant', async () => {
    const taskPath = '~__pregel_pull, model';
    const taskId = 'df6210ff-d439-50d8-999d-a8f385beac97';
    for (const [tenant, stream] of [
      [T, 'lg.a.'],
      [T, 'lg.b.'],
      ['beta', 'lg.a.'],
    ] as const) {
      await label(tenant, stream, 'c1');
      const writes = [{ idx: 0, channel: 'messages', value: `${tenant}/${stream}` }];
      await world.ledger.pendingWrites.put(tenant, stream, 'c1', { taskId, taskPath, writes });
      const page = await stores.records.query(streamPk(tenant, stream), { skPrefix: 'pw#' });
      expect(page.items).toHaveLength(1);
      expect(page.items[0]?.sk).toMatch(/^pw#c1#[A-Za-z0-9_-]{16}#2147483648$/);
      const listed = await world.ledger.pendingWrites.list(tenant, stream, 'c1');
      expect(listed).toEqual([{ taskId, taskPath, ...writes[0] }]);
    }
  });

  it('lists records of the old key with new ones in task order, one per write', async () => {
    const S = 'lg.old.';
    await label(T, S, 'c1');
    const pk = streamPk(T, S);
    // Written by the code before: the hex keys.
    const old = (taskPath: string, taskId: string, idx: number, value: string) =>
      stores.records.put({
        pk,
        sk: oldSk('c1', taskPath, taskId, idx),
        taskId,
        taskPath,
        idx,
        channel: 'ch',
        valueJson: JSON.stringify(value),
      });
    await old('b', 't1', 0, 'old b/t1/0');
    await old('b', 't1', -1, 'old b/t1/-1');
    await old('a', 't9', 1, 'old a/t9/1');
    const pw = world.ledger.pendingWrites;
    const put = (taskPath: string, taskId: string, idx: number, value: string) =>
      pw.put(T, S, 'c1', { taskId, taskPath, writes: [{ idx, channel: 'ch', value }] });
    // Retried after the upgrade: the same writes under the new keys.
    await put('b', 't1', 0, 'new b/t1/0');
    await put('b', 't1', -1, 'new b/t1/-1');
    await put('a', 't9', 0, 'new a/t9/0');
    await put('ab', 't0', 0, 'new ab/t0/0');
    await put('b', 't0', 2, 'new b/t0/2');
    const listed = await pw.list(T, S, 'c1');
    expect(listed.map((w) => w.value)).toEqual([
      'new a/t9/0',
      'old a/t9/1',
      'new ab/t0/0',
      'new b/t0/2',
      'new b/t1/-1', // last wins
      'old b/t1/0', // insert-once: the first stays
    ]);
  });
});
