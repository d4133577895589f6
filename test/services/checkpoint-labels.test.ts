import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamIndexPk, streamPk } from '../../shared/chain/storage-keys.js';
import {
  DivergenceError,
  InvalidInputError,
  LabelExistsError,
  NotFoundError,
  StreamNotFoundError,
} from '../../shared/domain/errors.js';
import type { DeltaOp, JsonObject } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  compactionWorld,
  keysUnder,
  type ManualClock,
  manualClock,
  partition,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const S = 'thread-1';
const digest = (state: JsonObject) => digestV2(state);

describe.each(allStores.filter((f) => f.enabled))('checkpoint labels (v2) on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const cp = async (
    ops: DeltaOp[],
    extra: { label?: string; meta?: never; parentLabel?: string; baseSeq?: number } = {},
    stream = S,
    tenant = T,
  ) => {
    const head = await world.ledger.appender.readHead(tenant, stream);
    let baseDigest = head.stateDigest;
    if (extra.baseSeq !== undefined && extra.baseSeq !== head.stateSeq) {
      baseDigest =
        extra.baseSeq === 0
          ? EMPTY_STATE_DIGEST_V2
          : (await world.ledger.states.hydrate(tenant, stream, extra.baseSeq)).stateDigest;
    }
    return world.ledger.checkpoints.checkpoint({ tenant, stream, ops, baseDigest, ...extra });
  };
  const set = (path: string, value: unknown): DeltaOp => ({ op: 'set', path, value }) as DeltaOp;

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, { snapshotEvery: 3 }, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  describe('labels', () => {
    it('answers a label’s seq, digest, meta and parent in one read', async () => {
      await cp([set('/a', 1)], { label: 'c1', meta: { step: 0, source: 'input' } as never });
      const second = await cp([set('/b', 2)], {
        label: 'c2',
        parentLabel: 'c1',
        meta: { step: 1 } as never,
      });
      const got = await world.ledger.labels.get(T, S, 'c2');
      expect(got).toMatchObject({
        label: 'c2',
        seq: second.seq,
        stateDigest: digest({ a: 1, b: 2 }),
        meta: { step: 1 },
        parentLabel: 'c1',
      });
      await expect(world.ledger.labels.get(T, S, 'nope')).rejects.toBeInstanceOf(NotFoundError);
      expect((await world.ledger.reader.head(T, S)).labels).toBe(2);
    });

    it('keeps any JSON in meta and pending writes: empty keys, deep nesting, big numbers', async () => {
      // LangGraph's metadata is `{ parents: { "": id } }` (the root namespace is ""); DynamoDB
      // refuses an empty attribute name in a map, so records hold client JSON as text.
      const meta = { parents: { '': 'c0' }, deep: { a: [{ '': [1.5, null, 'x'] }] }, n: 1e21 };
      await cp([set('/a', 1)], { label: 'c1', meta: meta as never });
      expect((await world.ledger.labels.get(T, S, 'c1')).meta).toEqual(meta);
      const page = await world.ledger.labels.list(T, S, { meta: { parents: { '': 'c0' } } });
      expect(page.checkpoints.map((c) => [c.label, c.meta])).toEqual([['c1', meta]]);
      const value = { j: { '': { '': [] } }, s: '' };
      await world.ledger.pendingWrites.put(T, S, 'c1', {
        taskId: 't',
        taskPath: '',
        writes: [{ idx: 0, channel: '', value: value as never }],
      });
      const writes = await world.ledger.pendingWrites.list(T, S, 'c1');
      expect(writes.map((w) => [w.channel, w.value])).toEqual([['', value]]);
    });

    it('refuses a label the stream already holds, writing nothing', async () => {
      await cp([set('/a', 1)], { label: 'c1' });
      const before = await world.ledger.reader.head(T, S);
      await expect(cp([set('/a', 2)], { label: 'c1' })).rejects.toBeInstanceOf(LabelExistsError);
      const after = await world.ledger.reader.head(T, S);
      expect(after.seq).toBe(before.seq);
      // The same label in another stream or tenant is another label.
      await expect(cp([set('/a', 1)], { label: 'c1' }, 'thread-2')).resolves.toMatchObject({
        seq: 1,
      });
      await expect(cp([set('/a', 1)], { label: 'c1' }, S, 'other')).resolves.toMatchObject({
        seq: 1,
      });
    });

    it('refuses a duplicate label inside the commit transaction too (concurrent writers)', async () => {
      // Both pass the pre-check; the second commit meets the first one's label record.
      const head = await world.ledger.appender.readHead(T, S);
      const base = { tenant: T, stream: S, baseDigest: head.stateDigest, label: 'same' };
      const results = await Promise.allSettled([
        world.ledger.checkpoints.checkpoint({ ...base, ops: [set('/w', 'a')] }),
        world.ledger.checkpoints.checkpoint({ ...base, ops: [set('/w', 'b')] }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(['ErrLabelExists', 'ErrDivergenceDetected']).toContain(refused.reason.code);
      expect((await world.ledger.labels.list(T, S)).checkpoints).toHaveLength(1);
    });

    it('lists labelled checkpoints newest first, by page, before a seq, and by meta', async () => {
      for (let i = 0; i < 7; i++) {
        await cp([set(`/k${i}`, i)], {
          label: `c${i}`,
          meta: { step: i, source: i % 2 === 0 ? 'loop' : 'input' } as never,
        });
      }
      await world.ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'note', payload: 1 }],
      });
      const all = await world.ledger.labels.list(T, S);
      expect(all.checkpoints.map((c) => c.label)).toEqual([
        'c6',
        'c5',
        'c4',
        'c3',
        'c2',
        'c1',
        'c0',
      ]);
      expect(all.next).toBeUndefined();
      const first = await world.ledger.labels.list(T, S, { limit: 3 });
      expect(first.checkpoints.map((c) => c.label)).toEqual(['c6', 'c5', 'c4']);
      const second = await world.ledger.labels.list(T, S, { limit: 3, before: first.next });
      expect(second.checkpoints.map((c) => c.label)).toEqual(['c3', 'c2', 'c1']);
      const loop = await world.ledger.labels.list(T, S, { meta: { source: 'loop' } });
      expect(loop.checkpoints.map((c) => c.label)).toEqual(['c6', 'c4', 'c2', 'c0']);
      const step = await world.ledger.labels.list(T, S, { meta: { step: 3, source: 'input' } });
      expect(step.checkpoints.map((c) => c.label)).toEqual(['c3']);
      expect((await world.ledger.labels.list(T, 'other')).checkpoints).toEqual([]);
    });
  });

  describe('baseSeq', () => {
    it('branches from an older checkpoint: the result becomes the head state, one ledger', async () => {
      const c1 = await cp([set('/messages', ['hi'])], { label: 'c1' });
      await cp([set('/messages/-', 'a')], { label: 'c2' });
      await cp([set('/messages/-', 'b')], { label: 'c3' });
      const branch = await cp([set('/messages/-', 'x')], {
        label: 'c4',
        baseSeq: c1.seq,
        parentLabel: 'c1',
      });
      expect(branch.stateDigest).toBe(digest({ messages: ['hi', 'x'] }));
      const head = await world.ledger.states.hydrate(T, S);
      expect(head.state).toEqual({ messages: ['hi', 'x'] });
      // Every seq still hydrates to what it was, across the K = 3 base snapshot.
      expect((await world.ledger.states.hydrate(T, S, 3)).state).toEqual({
        messages: ['hi', 'a', 'b'],
      });
      const next = await cp([set('/messages/-', 'y')], { label: 'c5' });
      expect((await world.ledger.states.hydrate(T, S, next.seq)).state).toEqual({
        messages: ['hi', 'x', 'y'],
      });
      expect((await world.ledger.labels.get(T, S, 'c4')).parentSeq).toBe(c1.seq);
      expect((await world.ledger.verifier.verify(T, S)).ok).toBe(true);
    });

    it('branches from the empty state at baseSeq 0', async () => {
      await cp([set('/a', 1)]);
      await cp([set('/b', 1)], { baseSeq: 0 });
      expect((await world.ledger.states.hydrate(T, S)).state).toEqual({ b: 1 });
    });

    it('traps a baseDigest that is not the state at baseSeq', async () => {
      await cp([set('/a', 1)]);
      await cp([set('/a', 2)]);
      const head = await world.ledger.appender.readHead(T, S);
      await expect(
        world.ledger.checkpoints.checkpoint({
          tenant: T,
          stream: S,
          ops: [set('/a', 3)],
          baseDigest: head.stateDigest,
          baseSeq: 1,
        }),
      ).rejects.toBeInstanceOf(DivergenceError);
      expect((await world.ledger.reader.head(T, S)).seq).toBe(2);
    });

    it('refuses a baseSeq that is not a checkpoint or lies past the head state (400)', async () => {
      await cp([set('/a', 1)]);
      await world.ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'note', payload: 1 }],
      });
      await cp([set('/a', 2)]);
      for (const baseSeq of [2, 9]) {
        await expect(cp([set('/a', 3)], { baseSeq })).rejects.toBeInstanceOf(InvalidInputError);
      }
      expect((await world.ledger.reader.head(T, S)).seq).toBe(3);
    });
  });

  describe('pending writes', () => {
    it('stores writes once for idx >= 0, last wins below 0, sorted by (path, task, idx)', async () => {
      await cp([set('/a', 1)], { label: 'c1' });
      const pw = world.ledger.pendingWrites;
      const w = (idx: number, value: unknown) => ({ idx, channel: 'ch', value: value as never });
      await pw.put(T, S, 'c1', {
        taskId: 'task_b',
        taskPath: '',
        writes: [w(1, 'b1'), w(0, 'b0')],
      });
      await pw.put(T, S, 'c1', { taskId: 'task_a', taskPath: '~p, z', writes: [w(0, 'a0')] });
      await pw.put(T, S, 'c1', {
        taskId: 'task_a',
        taskPath: '',
        writes: [w(0, 'first'), w(-1, 'e1')],
      });
      // A retry, and a stale second worker: insert-once for idx >= 0, last wins below.
      expect(
        await pw.put(T, S, 'c1', {
          taskId: 'task_a',
          taskPath: '',
          writes: [w(0, 'again'), w(-1, 'e2')],
        }),
      ).toEqual({ written: 1 });
      const got = await pw.list(T, S, 'c1');
      expect(got.map((x) => [x.taskPath, x.taskId, x.idx, x.value])).toEqual([
        ['', 'task_a', -1, 'e2'],
        ['', 'task_a', 0, 'first'],
        ['', 'task_b', 0, 'b0'],
        ['', 'task_b', 1, 'b1'],
        ['~p, z', 'task_a', 0, 'a0'],
      ]);
      await expect(pw.list(T, S, 'nope')).rejects.toBeInstanceOf(NotFoundError);
      await expect(
        pw.put(T, S, 'nope', { taskId: 't', taskPath: '', writes: [w(0, 1)] }),
      ).rejects.toBeInstanceOf(NotFoundError);
    });
    it('fences pending writes: a stale epoch, or no token while leased exclusively, writes nothing', async () => {
      await cp([set('/a', 1)], { label: 'c1' });
      const pw = world.ledger.pendingWrites;
      const w = (idx: number) => ({ idx, channel: 'ch', value: `v${idx}` as never });
      const old = await world.ledger.leases.acquire(T, S, 'w1', 60_000);
      expect(
        await pw.put(T, S, 'c1', { taskId: 'a', taskPath: '', writes: [w(0)] }, old.epoch),
      ).toEqual({ written: 1 });
      const next = await world.ledger.leases.acquire(T, S, 'w1', 60_000); // a restart: epoch + 1
      for (const fence of [old.epoch, undefined]) {
        await expect(
          pw.put(T, S, 'c1', { taskId: 'b', taskPath: '', writes: [w(0), w(-1)] }, fence),
        ).rejects.toMatchObject({ code: 'ErrFenced' });
      }
      expect(
        await pw.put(T, S, 'c1', { taskId: 'a', taskPath: '', writes: [w(0), w(1)] }, next.epoch),
      ).toEqual({ written: 1 });
      const got = await pw.list(T, S, 'c1');
      expect(got.map((x) => [x.taskId, x.idx])).toEqual([
        ['a', 0],
        ['a', 1],
      ]);
      // Another stream of the tenant is not leased: no token needed there.
      await cp([set('/a', 1)], { label: 'd1' }, 'thread-2');
      expect(
        await pw.put(T, 'thread-2', 'd1', { taskId: 'a', taskPath: '', writes: [w(0)] }),
      ).toEqual({ written: 1 });
    });
  });

  describe('stream list and deletion', () => {
    it('lists a tenant’s streams by prefix and cursor, with their seq and lease', async () => {
      for (const id of ['lg.a.', 'lg.a.child', 'lg.b.', 'other']) await cp([set('/x', 1)], {}, id);
      await cp([set('/x', 1)], {}, 'lg.a.', 'tenant-2');
      await world.ledger.leases.acquire(T, 'lg.b.', 'w1', 60_000);
      const page = await world.ledger.streamList.list(T, { prefix: 'lg.' });
      expect(page.streams.map((s) => s.streamId)).toEqual(['lg.a.', 'lg.a.child', 'lg.b.']);
      expect(page.streams[2]?.lease).toMatchObject({ owner: 'w1', epoch: 1, draining: false });
      expect(page.streams[0]).toMatchObject({ seq: 1, lease: null });
      const one = await world.ledger.streamList.list(T, { prefix: 'lg.', limit: 1 });
      expect(one.next).toBe('lg.a.');
      const rest = await world.ledger.streamList.list(T, { prefix: 'lg.', after: 'lg.a.' });
      expect(rest.streams.map((s) => s.streamId)).toEqual(['lg.a.child', 'lg.b.']);
      expect(
        (await world.ledger.streamList.list('tenant-2')).streams.map((s) => s.streamId),
      ).toEqual(['lg.a.']);
    });

    it('deletes a stream: gone at once, reclaimed by the compactor, id free again', async () => {
      await cp([set('/a', 1)], { label: 'c1' });
      await world.ledger.pendingWrites.put(T, S, 'c1', {
        taskId: 't',
        taskPath: '',
        writes: [{ idx: 0, channel: 'c', value: 1 }],
      });
      await cp([set('/a', 1)], {}, 'keep');
      await world.ledger.streamDeleter.delete(T, S);
      await expect(world.ledger.reader.head(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(world.ledger.streamDeleter.delete(T, S)).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      await expect(cp([set('/a', 2)])).rejects.toBeInstanceOf(StreamNotFoundError);
      expect((await world.ledger.streamList.list(T)).streams.map((s) => s.streamId)).toEqual([
        'keep',
      ]);
      await settle(world, (ms) => clock.advance(ms));
      expect(await keysUnder(stores.objects, `t/${T}/s/${S}/`)).toEqual([]);
      expect(await partition(stores.records, streamPk(T, S))).toEqual([]);
      expect((await partition(stores.records, streamIndexPk(T))).map((i) => i.sk)).toEqual([
        'keep',
      ]);
      // The id is free: a new stream from genesis, its old label gone.
      await expect(cp([set('/z', 1)], { label: 'c1' })).resolves.toMatchObject({ seq: 1 });
      expect((await world.ledger.reader.head(T, 'keep')).seq).toBe(1);
    });
  });
});
