import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CLIENT_IDEMPOTENCY_PREFIX,
  headKey,
  legacyIdempotencyKey,
  streamPk,
} from '../../shared/chain/storage-keys.js';
import { Appender, type AppendRequest, type CommitStep } from '../../shared/commit/append.js';
import {
  CrashInjectedError,
  EffectMismatchError,
  IdempotencyKeyReusedError,
  StreamNotFoundError,
  StreamRecreatedError,
} from '../../shared/domain/errors.js';
import {
  batch,
  compactionWorld,
  counterIds,
  type ManualClock,
  manualClock,
  partition,
  readAll,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * A stream's lives (append.ts, stream-delete.ts): Idempotency-Keys are kept per stream and
 * incarnation, so a stream deleted and created again under the same id never answers a
 * request of its past life; a request naming the past life is ErrStreamRecreated; a deleted
 * stream refuses leases and effects; a legacy tenant-wide record counts only for its own
 * stream and life.
 */

const T = 'acme';
const S = 'run-1';
const HOUR = 3_600_000;

describe.each(allStores.filter((f) => f.enabled))('stream incarnations on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;

  beforeEach(async () => {
    clock = manualClock();
    stores = await factory.make(clock);
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(() => stores.cleanup());

  const idem = (key: string, digest = 'a'.repeat(64)) => ({ key, digest });
  const append = (req: Partial<AppendRequest>, appender = world.ledger.appender) =>
    appender.append({ tenant: T, stream: S, events: batch('a'), ...req });
  /** DELETE, then the compactor until the stream is gone. */
  const deleteAndCompact = async (stream = S) => {
    await world.ledger.streamDeleter.delete(T, stream);
    await settle(world, (ms) => clock.advance(ms));
    expect(await world.records.get(headKey(T, stream))).toBeUndefined();
  };
  const crashingAfter = (step: CommitStep) =>
    new Appender({
      ...stores,
      clock,
      crash: (at) => {
        if (at === step) throw new CrashInjectedError(at);
      },
    });

  describe('idempotency', () => {
    it('writes a key of the deleted life again in the new life, which exists', async () => {
      const first = await append({ idempotency: idem('turn-1') });
      await deleteAndCompact();

      const again = await append({ idempotency: idem('turn-1') });

      expect(again.replayed).toBe(false);
      expect(again.response.firstSeq).toBe(1);
      expect(again.response.incarnation).toEqual(expect.any(String));
      expect(again.response.incarnation).not.toBe(first.response.incarnation);
      expect((await world.ledger.reader.head(T, S)).incarnation).toBe(again.response.incarnation);
      expect((await readAll(world, T, S)).map((e) => e.payload)).toEqual([{ label: 'a', i: 0 }]);
      // Its retry in the new life is answered, not written again.
      const retry = await append({ idempotency: idem('turn-1') });
      expect(retry).toMatchObject({ replayed: true, response: again.response });
    });

    it('keeps the records in the stream partition, by incarnation, and deletes them with it', async () => {
      const { response } = await append({ idempotency: idem('k/1') });
      const sks = (await partition(world.records, streamPk(T, S))).map((i) => i.sk);
      expect(sks).toContain(`${CLIENT_IDEMPOTENCY_PREFIX}${response.incarnation}#k/1`);
      expect(await world.records.get(legacyIdempotencyKey(T, 'k/1'))).toBeUndefined();
      await deleteAndCompact();
      expect(await partition(world.records, streamPk(T, S))).toEqual([]);
    });

    it('answers another stream’s key as another request, and a tenant’s as its own', async () => {
      await append({ idempotency: idem('turn-1') });
      const other = await append({ stream: 'run-2', idempotency: idem('turn-1', 'b'.repeat(64)) });
      const tenant = await append({ tenant: 'beta', idempotency: idem('turn-1', 'c'.repeat(64)) });
      expect([other.replayed, tenant.replayed]).toEqual([false, false]);
      await expect(append({ idempotency: idem('turn-1', 'd'.repeat(64)) })).rejects.toBeInstanceOf(
        IdempotencyKeyReusedError,
      );
    });
  });

  describe('Hefesto-Incarnation', () => {
    it('refuses a retry naming the deleted life, in the new life or none, and writes nothing', async () => {
      const first = await append({ idempotency: idem('turn-1') });
      const old = first.response.incarnation;
      await deleteAndCompact();

      // Gone and not created again: the retry must not create it.
      await expect(
        append({ idempotency: idem('turn-1'), incarnation: old }),
      ).rejects.toBeInstanceOf(StreamRecreatedError);
      expect(await world.records.get(headKey(T, S))).toBeUndefined();

      const life2 = await append({ events: batch('new') });
      const err = await append({ idempotency: idem('turn-1'), incarnation: old }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StreamRecreatedError);
      expect((err as StreamRecreatedError).code).toBe('ErrStreamRecreated');
      expect((await world.ledger.reader.head(T, S)).seq).toBe(1);
      expect((await readAll(world, T, S)).map((e) => e.payload)).toEqual([{ label: 'new', i: 0 }]);
      // Naming the life as it is now writes.
      const ok = await append({ incarnation: life2.response.incarnation });
      expect(ok.response.lastSeq).toBe(2);
    });

    it('refuses a checkpoint naming another life', async () => {
      const first = await append({});
      const head = await world.ledger.reader.head(T, S);
      await expect(
        world.ledger.checkpoints.checkpoint({
          tenant: T,
          stream: S,
          ops: [{ op: 'set', path: '/a', value: 1 }],
          baseDigest: head.stateDigest,
          incarnation: `${first.response.incarnation}-not`,
        }),
      ).rejects.toBeInstanceOf(StreamRecreatedError);
      const done = await world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/a', value: 1 }],
        baseDigest: head.stateDigest,
        incarnation: first.response.incarnation,
      });
      expect(done).toMatchObject({ seq: 2, incarnation: first.response.incarnation });
    });
  });

  describe('crash windows within one incarnation, in a stream’s second life', () => {
    beforeEach(async () => {
      await append({ idempotency: idem('turn-1'), events: batch('life-1', 2) });
      await deleteAndCompact();
    });

    it.each([
      ['a new stream', 0],
      ['an existing one', 1],
    ])('segment written, head not advanced (%s): the retry commits it once', async (_, before) => {
      for (let i = 0; i < before; i++) await append({ events: batch(`pre-${i}`) });
      await expect(
        append({ idempotency: idem('turn-1') }, crashingAfter('segment-written')),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      clock.advance(3000); // past the in-flight grace
      const retry = await append({ idempotency: idem('turn-1') });
      const again = await append({ idempotency: idem('turn-1') });
      expect(retry.response.lastSeq).toBe(before + 1);
      expect(again).toMatchObject({ replayed: true, response: retry.response });
      const payloads = (await readAll(world, T, S)).map((e) => e.payload);
      expect(payloads).toHaveLength(before + 1);
      expect(payloads.at(-1)).toEqual({ label: 'a', i: 0 });
    });

    it('reply lost after the commit: the retry answers it, in the same incarnation', async () => {
      await expect(
        append({ idempotency: idem('turn-1') }, crashingAfter('committed')),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      const head = await world.ledger.reader.head(T, S);
      const retry = await append({ idempotency: idem('turn-1'), incarnation: head.incarnation });
      expect(retry).toMatchObject({ replayed: true });
      expect(retry.response).toMatchObject({ lastSeq: 1, incarnation: head.incarnation });
      expect(await readAll(world, T, S)).toHaveLength(1);
    });
  });

  describe('a deleted stream', () => {
    const begin = (effectKey: string, intent: unknown = { cents: 5 }) =>
      world.ledger.effects.begin({
        tenant: T,
        stream: S,
        effectKey,
        kind: 'payment',
        intent: intent as never,
      });

    it('refuses lease acquire, effect begin and complete, and lists no effects', async () => {
      await append({});
      const held = await begin('pay-1');
      if (held.status !== 'acquired') throw new Error(held.status);
      await world.ledger.leases.acquire(T, S, 'w1', 10_000);
      await world.ledger.streamDeleter.delete(T, S);

      await expect(world.ledger.leases.acquire(T, S, 'w2', 10_000)).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      expect(await world.ledger.leases.get(T, S)).toBeUndefined();
      await expect(begin('pay-2')).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(
        world.ledger.effects.finish({
          tenant: T,
          stream: S,
          effectKey: 'pay-1',
          holder: held.holder,
          outcome: { result: { ok: true } },
        }),
      ).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(world.ledger.effectList.list(T, S, { limit: 10 })).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      expect((await world.ledger.effects.get(T, S, 'pay-1'))?.status).toBe('pending');
      expect(await world.ledger.effects.get(T, S, 'pay-2')).toBeUndefined();

      // Once the deletion is done, the id is a new stream: its effects start afresh.
      await settle(world, (ms) => clock.advance(ms));
      expect(await world.ledger.effects.get(T, S, 'pay-1')).toBeUndefined();
      expect((await begin('pay-1')).status).toBe('acquired');
    });

    it('keeps the incarnation on an effect begun on a live stream', async () => {
      const { response } = await append({});
      await begin('pay-1');
      expect(response.incarnation).toEqual(expect.any(String));
      expect((await world.ledger.effects.get(T, S, 'pay-1'))?.incarnation).toBe(
        response.incarnation,
      );
    });
  });

  describe('effect begin', () => {
    it('compares the whole intent: the same key with another intent is ErrEffectMismatch', async () => {
      const effects = world.ledger.effects;
      const req = { tenant: T, stream: S, effectKey: 'pay-1', kind: 'payment' };
      await effects.begin({ ...req, intent: { cents: 5, to: 'a' } });
      await expect(effects.begin({ ...req, intent: { cents: 6, to: 'a' } })).rejects.toBeInstanceOf(
        EffectMismatchError,
      );
      // The same intent in another key order is the same effect (canonical JSON).
      const same = await effects.begin({ ...req, intent: { to: 'a', cents: 5 } });
      expect(same.status).toBe('in_progress');
    });
  });

  describe('the legacy tenant-wide record', () => {
    /** A stream written before incarnations: its head has none. */
    const legacyStream = async (stream = S) => {
      await append({ stream });
      await world.records.update(headKey(T, stream), { remove: ['incarnation'] });
      const head = await world.ledger.reader.head(T, stream);
      expect(head.incarnation).toBeUndefined();
      return head;
    };
    const putLegacy = async (
      key: string,
      record: { stream: string; createdAt: number; firstSeq?: number },
    ) => {
      const seq = record.firstSeq ?? 1;
      await world.records.put({
        ...legacyIdempotencyKey(T, key),
        stream: record.stream,
        digest: 'a'.repeat(64),
        status: 201,
        body: { firstSeq: seq, lastSeq: seq, head: { seq, hash: 'f'.repeat(64) } },
        createdAt: record.createdAt,
        ttl: Math.floor((clock.now() + 24 * HOUR) / 1000),
      });
    };

    it('is honoured for its stream in the head’s life, also for 24 h after its first new commit', async () => {
      const head = await legacyStream();
      clock.advance(1000);
      const createdAt = clock.now();
      await putLegacy('old-1', { stream: S, createdAt });

      const replay = await append({ idempotency: idem('old-1') });
      expect(replay).toMatchObject({ replayed: true, response: { firstSeq: 1, lastSeq: 1 } });
      await expect(append({ idempotency: idem('old-1', 'b'.repeat(64)) })).rejects.toBeInstanceOf(
        IdempotencyKeyReusedError,
      );
      expect((await world.ledger.reader.head(T, S)).seq).toBe(head.seq);

      // The next commit gives the head an incarnation; the legacy record still counts for 24 h.
      const next = await append({ idempotency: idem('new-1') });
      expect(next.response.incarnation).toEqual(expect.any(String));
      clock.advance(23 * HOUR);
      expect((await append({ idempotency: idem('old-1') })).replayed).toBe(true);
      clock.advance(2 * HOUR);
      // Past those 24 h it is not read, even when it has not expired (TTL deletes are late).
      await putLegacy('old-1', { stream: S, createdAt });
      expect((await append({ idempotency: idem('old-1') })).replayed).toBe(false);
    });

    it('is ignored for another stream, and for an older life of the stream', async () => {
      const head = await legacyStream();
      await putLegacy('other', { stream: 'run-2', createdAt: clock.now() + 1 });
      await putLegacy('older', { stream: S, createdAt: head.createdAt - 1 });

      const other = await append({ idempotency: idem('other', 'b'.repeat(64)) });
      const older = await append({ idempotency: idem('older') });

      expect([other.replayed, older.replayed]).toEqual([false, false]);
      expect((await world.ledger.reader.head(T, S)).seq).toBe(3);
    });
  });

  it('gives incarnations through the id port', async () => {
    const ids = counterIds('life');
    const w = compactionWorld(stores, {}, clock);
    const appender = new Appender({ ...stores, clock, ids });
    const { response } = await appender.append({ tenant: T, stream: 'ported', events: batch('x') });
    expect(response.incarnation).toBe('life-1');
    expect((await w.ledger.reader.head(T, 'ported')).incarnation).toBe('life-1');
  });
});
