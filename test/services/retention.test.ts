import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamPk } from '../../shared/chain/storage-keys.js';
import { PrunedError, StreamNotFoundError } from '../../shared/domain/errors.js';
import { genesisHash } from '../../shared/domain/event.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  batch,
  compactionWorld,
  GRACE,
  keysUnder,
  LEASE,
  type ManualClock,
  manualClock,
  partition,
  readAll,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';
import { waitUntil } from '../support/wait.js';

const T = 'acme';
const S = 'run-1';
const DAY = 86_400_000;

describe.each(allStores.filter((f) => f.enabled))('retention on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const append = (events = batch('e'), stream = S, extra = {}) =>
    world.ledger.appender.append({ tenant: T, stream, events, ...extra });
  const appendMany = async (n: number, stream = S, label = 'e') => {
    for (let i = 0; i < n; i++) await append(batch(`${label}${i}`), stream);
  };
  const advance = (ms: number) => clock.advance(ms);
  const gone = async (stream = S) => {
    expect(await keysUnder(stores.objects, `t/${T}/s/${stream}/`)).toEqual([]);
    expect(await partition(stores.records, streamPk(T, stream))).toEqual([]);
  };

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  describe('expiry', () => {
    it('deletes an expired stream completely and never serves it half deleted', async () => {
      await appendMany(6);
      await world.ledger.retention.set(T, S, { ttlMs: DAY });
      expect(await world.ledger.retention.get(T, S)).toEqual({ expiresAt: clock.now() + DAY });
      advance(DAY - 1);
      expect(await world.compactor().run()).toMatchObject({ streamsDeleted: 0 });
      expect((await world.ledger.reader.head(T, S)).seq).toBe(6);

      advance(1);
      await world.compactor().run();
      // Marked: gone for readers and writers, though nothing is deleted yet.
      const { reader, states } = world.ledger;
      await expect(reader.head(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(reader.readEvents(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(reader.verify(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(states.hydrate(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(append()).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(world.ledger.retention.set(T, S, { ttlMs: null })).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      expect((await keysUnder(stores.objects, `t/${T}/s/${S}/`)).length).toBeGreaterThan(0);

      const reports = await settle(world, advance);
      expect(reports.reduce((n, r) => n + r.streamsDeleted, 0)).toBe(1);
      await gone();
      // The id is free again: a new stream from genesis.
      const fresh = await append(batch('new'));
      expect(fresh.response).toMatchObject({ firstSeq: 1, lastSeq: 1 });
      expect((await readAll(world, T, S))[0]?.prevHash).toBe(genesisHash(T, S));
    });

    it('keeps a stream whose TTL was extended or removed before it expired', async () => {
      await appendMany(2, 'a');
      await appendMany(2, 'b');
      await world.ledger.retention.set(T, 'a', { ttlMs: 1000 });
      await world.ledger.retention.set(T, 'b', { ttlMs: 1000 });
      await world.ledger.retention.set(T, 'a', { ttlMs: 10 * DAY });
      await world.ledger.retention.set(T, 'b', { ttlMs: null });
      await settle(world, advance);
      expect((await world.ledger.reader.head(T, 'a')).seq).toBe(2);
      expect((await world.ledger.reader.head(T, 'b')).seq).toBe(2);
      expect(await world.ledger.retention.get(T, 'b')).toEqual({});
    });

    it('stamps the deployment default, or the creating request’s TTL, on new streams', async () => {
      const defaults = compactionWorld(stores, { defaultTtlMs: DAY }, clock);
      await defaults.ledger.appender.append({ tenant: T, stream: 'dflt', events: batch('x') });
      await defaults.ledger.appender.append({
        tenant: T,
        stream: 'own',
        events: batch('x'),
        ttlMs: 2 * DAY,
      });
      const now = clock.now();
      expect(await world.ledger.retention.get(T, 'dflt')).toEqual({ expiresAt: now + DAY });
      expect(await world.ledger.retention.get(T, 'own')).toEqual({ expiresAt: now + 2 * DAY });
      // Later appends do not move it.
      await defaults.ledger.appender.append({ tenant: T, stream: 'dflt', events: batch('y') });
      expect(await world.ledger.retention.get(T, 'dflt')).toEqual({ expiresAt: now + DAY });
      advance(DAY);
      await settle(world, advance);
      await gone('dflt');
      expect((await world.ledger.reader.head(T, 'own')).seq).toBe(1);
    });

    it('answers StreamNotFound for retention of an unknown stream', async () => {
      await expect(world.ledger.retention.set(T, 'nope', { ttlMs: 1 })).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
    });

    it('deletes a stream while writers and readers keep at it, serving none of it half gone', async () => {
      await appendMany(10);
      await world.ledger.retention.set(T, S, { ttlMs: 1 });
      advance(2);
      let stop = false;
      const seen: string[] = [];
      const tick = () => new Promise((r) => setImmediate(r));
      const writer = (async () => {
        while (!stop) {
          await tick();
          await append(batch('w')).then(
            () => seen.push('appended'),
            (e: unknown) => seen.push((e as { code: string }).code),
          );
        }
      })();
      const reader = (async () => {
        while (!stop) {
          await tick();
          try {
            const events = await readAll(world, T, S);
            // Whatever incarnation it reads, it is whole: 1..n without a gap.
            expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
            expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true });
            seen.push('read');
          } catch (err) {
            expect(err).toBeInstanceOf(StreamNotFoundError);
            seen.push('404');
          }
        }
      })();
      await world.compactor().run(); // marks it deleting
      // Let the writer and the reader go on against the stream marked deleting (counted, not timed).
      const marked = seen.length;
      await waitUntil('two tries on the stream marked deleting', () => seen.length >= marked + 2);
      advance(GRACE + LEASE);
      await world.compactor().run(); // deletes it
      // Let the writer and the reader each try again after the delete (counted, not timed).
      const after = seen.length;
      await waitUntil('four tries after the delete', () => seen.length >= after + 4);
      stop = true;
      await Promise.all([writer, reader]);
      expect(seen).toContain('ErrStreamNotFound');
      const head = await world.ledger.reader.head(T, S).catch(() => undefined);
      if (head) expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true });
    });
  });

  describe('pruning', () => {
    const checkpoint = async (value: number, base: string) =>
      world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: `/k${value}`, value }],
        baseDigest: base,
      });

    it('prunes events older than the horizon and keeps the rest verifiable', async () => {
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let i = 1; i <= 8; i++) {
        await append(batch(`old${i}`));
        digest = (await checkpoint(i, digest)).stateDigest;
        advance(1000);
      }
      const cut = clock.now();
      advance(DAY - 500);
      for (let i = 1; i <= 4; i++) await append(batch(`new${i}`));
      const before = await readAll(world, T, S);
      const stateBefore = await world.ledger.states.hydrate(T, S);
      await world.ledger.retention.set(T, S, { pruneAfterMs: DAY });
      // Everything sealed up to `cut - 500` is older than a day by now.
      const reports = await settle(world, advance);
      expect(reports.reduce((n, r) => n + r.streamsPruned, 0)).toBeGreaterThanOrEqual(1);
      const view = await world.ledger.retention.get(T, S);
      expect(view.prunedSeq).toBe(16);
      expect(view.prunedHash).toBe(before[15]?.hash);
      expect(cut).toBeGreaterThan(0);

      // Reads before the pruning point are refused; reads after it are the same events.
      await expect(world.ledger.reader.readEvents(T, S, { from: 1 })).rejects.toBeInstanceOf(
        PrunedError,
      );
      await expect(world.ledger.reader.readEvents(T, S, { from: 16 })).rejects.toMatchObject({
        code: 'ErrPruned',
        prunedSeq: 16,
      });
      expect(await readAll(world, T, S)).toEqual(before.slice(16));
      expect(await world.ledger.reader.verify(T, S)).toEqual({
        ok: true,
        seq: 20,
        hash: before[19]?.hash,
      });
      // State: at and after the pruning point, from the base written there; not before.
      expect((await world.ledger.states.hydrate(T, S)).state).toEqual(stateBefore.state);
      expect(await world.ledger.states.hydrate(T, S, 16)).toMatchObject({ baseSeq: 16 });
      await expect(world.ledger.states.hydrate(T, S, 15)).rejects.toBeInstanceOf(PrunedError);
      // Objects of the pruned events are gone but the segment of the last checkpoint at or
      // before the pruning point (seq 16), whose digest binds the base there; the stream goes on.
      const seg = await keysUnder(stores.objects, `t/${T}/s/${S}/seg/`);
      expect(seg.every((k) => Number(k.split('/seg/')[1]?.slice(0, 16)) >= 16)).toBe(true);
      expect(seg.some((k) => Number(k.split('/seg/')[1]?.slice(0, 16)) === 16)).toBe(true);
      const snaps = await keysUnder(stores.objects, `t/${T}/s/${S}/snap/`);
      expect(snaps.every((k) => Number(k.split('/snap/')[1]?.slice(0, 16)) >= 16)).toBe(true);
      await checkpoint(99, stateBefore.stateDigest);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 21 });
      const fork = await world.ledger.checkpoints.fork({
        tenant: T,
        source: S,
        at: 18,
        newStreamId: 'fork',
      });
      expect(fork.seq).toBe(1);
    });

    it('prunes a fork, its origin snapshot included, keeping its state', async () => {
      const base = await checkpoint(1, EMPTY_STATE_DIGEST_V2);
      await world.ledger.checkpoints.fork({ tenant: T, source: S, at: base.seq, newStreamId: 'f' });
      await world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream: 'f',
        ops: [{ op: 'set', path: '/f', value: true }],
        baseDigest: base.stateDigest,
      });
      await appendMany(2, 'f');
      await world.ledger.retention.set(T, 'f', { pruneAfterMs: DAY });
      advance(DAY + 1);
      await settle(world, advance);
      expect(await world.ledger.retention.get(T, 'f')).toMatchObject({ prunedSeq: 4 });
      expect((await world.ledger.states.hydrate(T, 'f')).state).toEqual({ k1: 1, f: true });
      const snaps = await keysUnder(stores.objects, `t/${T}/s/f/snap/`);
      expect(snaps.map((k) => k.split('/snap/')[1]?.slice(0, 16))).toEqual(['0000000000000004']);
      await expect(
        world.ledger.checkpoints.fork({ tenant: T, source: 'f', at: 1, newStreamId: 'g' }),
      ).rejects.toBeInstanceOf(PrunedError);
    });

    it('prunes again as more events age out, and everything when all are old', async () => {
      await appendMany(6);
      await world.ledger.retention.set(T, S, { pruneAfterMs: DAY });
      advance(DAY + 1);
      await settle(world, advance);
      expect((await world.ledger.retention.get(T, S)).prunedSeq).toBe(6);
      const head = await world.ledger.reader.head(T, S);
      expect(await world.ledger.reader.verify(T, S)).toEqual({
        ok: true,
        seq: 6,
        hash: head.hash,
      });
      expect(await world.ledger.reader.readEvents(T, S)).toEqual({ events: [] });
      await appendMany(3, S, 'more');
      expect((await readAll(world, T, S)).map((e) => e.seq)).toEqual([7, 8, 9]);
      advance(DAY + 1);
      await settle(world, advance);
      expect((await world.ledger.retention.get(T, S)).prunedSeq).toBe(9);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 9 });
    });
  });
});
