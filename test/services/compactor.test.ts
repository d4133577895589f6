import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import {
  baseDueKey,
  mergedSegmentKey,
  segmentKey,
  segmentPrefix,
  snapshotIndexKey,
} from '../../shared/chain/storage-keys.js';
import { Appender } from '../../shared/commit/append.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import { DELTA_EVENT } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { Item, RecordStore } from '../../shared/ports/record-store.js';
import {
  batch,
  compactionWorld,
  GRACE,
  keysUnder,
  LEASE,
  leftovers,
  type ManualClock,
  manualClock,
  readAll,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const S = 'run-1';

describe.each(allStores.filter((f) => f.enabled))('compactor on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const append = (events = batch('e'), stream = S, extra = {}) =>
    world.ledger.appender.append({ tenant: T, stream, events, ...extra });
  const appendMany = async (n: number, stream = S, label = 'e') => {
    for (let i = 0; i < n; i++) await append(batch(`${label}${i}`), stream);
  };
  const advance = (ms: number) => clock.advance(ms);

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  describe('finding work', () => {
    it('visits only the streams an append marked, never scanning the others', async () => {
      await appendMany(8, 'busy');
      await appendMany(3, 'quiet');
      const report = await world.compactor().run();
      expect(report).toMatchObject({ examined: 1, compacted: 1, more: false });
      expect((await leftovers(world, T, 'busy')).indexed).toBe(1);
      expect((await leftovers(world, T, 'quiet')).indexed).toBe(3);
      expect(await world.compactor().run()).toMatchObject({ examined: 0 });
    });

    it('bounds a run by streams and resumes where it stopped', async () => {
      const streams = ['a', 'b', 'c', 'd', 'e'];
      for (const s of streams) await appendMany(4, s);
      const first = await world.compactor({ maxStreams: 2 }).run();
      expect(first).toMatchObject({ examined: 2, more: true });
      const second = await world.compactor({ maxStreams: 2 }).run();
      const third = await world.compactor({ maxStreams: 2 }).run();
      expect(first.examined + second.examined + third.examined).toBe(5);
      for (const s of streams) expect((await leftovers(world, T, s)).indexed).toBe(1);
      expect(await world.compactor({ maxStreams: 2 }).run()).toMatchObject({ examined: 0 });
    });

    it('bounds a run by time: an interrupted visit schedules the rest', async () => {
      await appendMany(12);
      // Every clock read costs 1 s: the run runs out of time after its first merge.
      const ticking = { now: () => clock.advance(1000) };
      const slow = compactionWorld(stores, {}, ticking).compactor({
        maxInputs: 4,
        leaseMs: 10_000,
        maxRunMs: 5_000,
      });
      const report = await slow.run();
      expect(report).toMatchObject({ more: true, segmentsWritten: 1 });
      expect((await leftovers(world, T, S)).indexed).toBe(9);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 12 });
      await settle(world, advance);
      expect((await leftovers(world, T, S)).unnamed).toEqual([]);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 12 });
    });
  });

  describe('merging', () => {
    it('merges small segments into one without changing any event or hash', async () => {
      await appendMany(20);
      const before = await readAll(world, T, S);
      const verified = await world.ledger.reader.verify(T, S);
      const report = await world.compactor().run();
      expect(report).toMatchObject({ compacted: 1, segmentsMerged: 20, segmentsWritten: 1 });
      expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
      expect(await readAll(world, T, S)).toEqual(before);
      expect(await world.ledger.reader.verify(T, S)).toEqual(verified);
      expect(await stores.objects.head(mergedSegmentKey(T, S, 1, 20))).toBeDefined();
      // The superseded objects stay until their grace period has passed.
      expect((await leftovers(world, T, S)).segments).toBe(21);
      advance(GRACE - 1);
      expect(await world.compactor().run()).toMatchObject({ examined: 0 });
      advance(LEASE + 1);
      expect(await world.compactor().run()).toMatchObject({ objectsDeleted: 20 });
      expect(await keysUnder(stores.objects, segmentPrefix(T, S))).toEqual([
        mergedSegmentKey(T, S, 1, 20),
      ]);
      expect(await readAll(world, T, S)).toEqual(before);
    });

    it('keeps merged segments near the target size and merges them further as they grow', async () => {
      await appendMany(60);
      const before = await readAll(world, T, S);
      const compact = () => world.compactor({ targetBytes: 4096 }).compactStream(T, S);
      await compact();
      const items = await stores.records.query(`t#${T}#s#${S}`, { skPrefix: 'seg#' });
      const sizes = items.items.map((i) => Number(i.size));
      expect(sizes.length).toBeGreaterThan(1);
      expect(sizes.slice(0, -1).every((n) => n <= 4096 && n > 1024)).toBe(true);
      expect(await readAll(world, T, S)).toEqual(before);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 60 });
    });

    it('reads the sizes an older index record lacks from the store', async () => {
      await appendMany(30);
      const pk = `t#${T}#s#${S}`;
      for (const item of (await stores.records.query(pk, { skPrefix: 'seg#' })).items) {
        await stores.records.update(item, { remove: ['size', 'createdAt'] });
      }
      await world.compactor({ targetBytes: 4096 }).compactStream(T, S);
      const items = (await stores.records.query(pk, { skPrefix: 'seg#' })).items;
      expect(items.length).toBeGreaterThan(1);
      expect(items.every((i) => typeof i.size === 'number' && i.size <= 4096)).toBe(true);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 30 });
    });

    it('serves a reader that fetched the old layout, before and after the grace', async () => {
      await appendMany(12);
      const expected = await readAll(world, T, S);
      // A reader that read the index, then pauses before fetching any segment.
      let release: () => void = () => {};
      const paused = new Promise<void>((resolve) => {
        release = resolve;
      });
      let pause = true;
      let reached = () => {};
      const blocked = new Promise<void>((resolve) => {
        reached = resolve;
      });
      const slow: ObjectStore = {
        ...stores.objects,
        get: async (key) => {
          if (pause) {
            reached();
            await paused;
          }
          return stores.objects.get(key);
        },
        head: (k) => stores.objects.head(k),
        list: (p, o) => stores.objects.list(p, o),
        putIfAbsent: (k, b) => stores.objects.putIfAbsent(k, b),
        putIfMatch: (k, b, e) => stores.objects.putIfMatch(k, b, e),
        delete: (k) => stores.objects.delete(k),
      };
      const reader = new Reader({ objects: slow, records: stores.records, retryDelayMs: 1 });
      const inFlight = reader.readEvents(T, S, { limit: 100 });
      await blocked; // the read is in flight: it holds the layout it read and waits for a body
      await world.compactor().run();
      advance(GRACE + LEASE + 1);
      await world.compactor().run(); // the old objects are gone now
      pause = false;
      release();
      expect((await inFlight).events).toEqual(expected);
    });

    it('starts a read again when it sees half of a publish (queries are not isolated)', async () => {
      await appendMany(8);
      const expected = await readAll(world, T, S);
      const pk = `t#${T}#s#${S}`;
      const old = (await stores.records.query(pk, { skPrefix: 'seg#' })).items;
      await world.compactor().run();
      const now = (await stores.records.query(pk, { skPrefix: 'seg#' })).items;
      // What a query may see in the middle of the publish transaction: the last record already
      // updated, the others not yet deleted; or the others deleted, the last not yet updated.
      const halves = [[...old.slice(0, -1), ...now], [old.at(-1) as Item]];
      for (const half of halves) {
        let served = 0;
        const records: RecordStore = {
          get: (k) => stores.records.get(k),
          put: (i, o) => stores.records.put(i, o),
          update: (k, u, o) => stores.records.update(k, u, o),
          delete: (k, o) => stores.records.delete(k, o),
          transact: (ops) => stores.records.transact(ops),
          query: async (p, o) => {
            if (o?.skPrefix === 'seg#' && served++ === 0) return { items: half };
            return stores.records.query(p, o);
          },
        };
        const reader = new Reader({ objects: stores.objects, records, retryDelayMs: 1 });
        expect((await reader.readEvents(T, S, { limit: 100 })).events).toEqual(expected);
        served = 0;
        expect(await reader.verify(T, S)).toMatchObject({ ok: true, seq: 8 });
        expect(served).toBeGreaterThan(1);
      }
    });

    it('keeps idempotent retries and roll-forward working after merges', async () => {
      const idem = { key: 'turn-3', digest: 'a'.repeat(64) };
      await appendMany(2);
      const first = await append(batch('idem', 2), S, { idempotency: idem });
      await appendMany(5);
      // A writer dies after writing its segment at head+1: an orphan the compactor must leave.
      const dying = new Appender({
        ...stores,
        clock,
        crash: (step) => {
          if (step === 'segment-written') throw new CrashInjectedError(step);
        },
      });
      await expect(
        dying.append({ tenant: T, stream: S, events: batch('orphan') }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      await settle(world, advance);
      expect(await stores.objects.head(segmentKey(T, S, 10))).toBeDefined();
      const retry = await append(batch('idem', 2), S, { idempotency: idem });
      expect(retry).toEqual({ response: first.response, replayed: true });
      const next = await append(batch('next'));
      expect(next.response).toMatchObject({ firstSeq: 11, lastSeq: 11 });
      const labels = (await readAll(world, T, S)).map(
        (e) => (e.payload as { label: string }).label,
      );
      expect(labels.slice(-2)).toEqual(['orphan', 'next']);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 11 });
    });

    it('never merges a segment that does not verify, and leaves the stream as it was', async () => {
      await appendMany(8);
      await stores.tamper(segmentKey(T, S, 5), (b) => {
        b[b.length - 1] = (b[b.length - 1] ?? 0) ^ 1;
        return b;
      });
      const errors: unknown[] = [];
      const report = await world.compactor({ onError: (e) => errors.push(e) }).run();
      expect(report).toMatchObject({ errors: 1, segmentsWritten: 0 });
      expect(errors[0]).toMatchObject({ code: 'ErrTamperedLedger', firstBadSeq: 5 });
      expect((await leftovers(world, T, S)).segments).toBe(8);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: false, firstBadSeq: 5 });
    });
  });

  describe('base snapshots and orphans', () => {
    const delta = (value: number, base: string) => {
      const state = { n: value };
      return {
        type: DELTA_EVENT,
        payload: {
          ops: [{ op: 'set', path: '/n', value }],
          baseDigest: base,
          stateDigest: digestV2(state),
        },
      };
    };

    it('writes the base snapshots a checkpoint died before writing', async () => {
      // Deltas appended without the checkpointer: as if each died right after its commit.
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let i = 1; i <= 7; i++) {
        const d = delta(i, digest);
        await append([d as never]);
        digest = d.payload.stateDigest;
      }
      expect(await stores.records.get(baseDueKey(T, S, 3))).toBeDefined();
      const report = await world.compactor().run();
      expect(report.snapshotsWritten).toBe(2);
      for (const seq of [3, 6]) {
        expect(await stores.records.get(snapshotIndexKey(T, S, seq))).toBeDefined();
        expect(await stores.records.get(baseDueKey(T, S, seq))).toBeUndefined();
      }
      const at7 = await world.ledger.states.hydrate(T, S, 7);
      expect(at7).toMatchObject({ state: { n: 7 }, baseSeq: 6, deltasApplied: 1, deltas: 7 });
    });

    it('leaves no base due when the checkpoint wrote it', async () => {
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let i = 1; i <= 3; i++) {
        const r = await world.ledger.checkpoints.checkpoint({
          tenant: T,
          stream: S,
          ops: [{ op: 'set', path: '/n', value: i }],
          baseDigest: digest,
        });
        digest = r.stateDigest;
      }
      expect(await stores.records.get(baseDueKey(T, S, 3))).toBeUndefined();
      expect(await world.compactor().run()).toMatchObject({ snapshotsWritten: 0 });
    });

    it('deletes a segment a stale writer re-created below the head, after the grace', async () => {
      await appendMany(8);
      const stale = await stores.objects.get(segmentKey(T, S, 2));
      await settle(world, advance);
      expect(await stores.objects.head(segmentKey(T, S, 2))).toBeUndefined();
      // A writer paused longer than the grace re-creates the key (its commit then fails).
      await stores.objects.putIfAbsent(segmentKey(T, S, 2), stale?.body ?? new Uint8Array());
      await appendMany(8, S, 'later');
      const reports = await settle(world, advance);
      expect(reports.reduce((n, r) => n + r.orphansFound, 0)).toBe(1);
      expect(await stores.objects.head(segmentKey(T, S, 2))).toBeUndefined();
      expect((await leftovers(world, T, S)).unnamed).toEqual([]);
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 16 });
    });
  });

  describe('two compactors at once', () => {
    it('split the streams between them and lose or duplicate nothing', async () => {
      const streams = ['s0', 's1', 's2', 's3', 's4', 's5'];
      const expected = new Map<string, unknown[]>();
      for (const s of streams) {
        await appendMany(9, s, s);
        expected.set(s, await readAll(world, T, s));
      }
      const [a, b] = await Promise.all([world.compactor().run(), world.compactor().run()]);
      expect(a.compacted + b.compacted).toBe(streams.length);
      await settle(world, advance);
      for (const s of streams) {
        expect(await readAll(world, T, s)).toEqual(expected.get(s));
        expect(await world.ledger.reader.verify(T, s)).toMatchObject({ ok: true, seq: 9 });
        expect(await leftovers(world, T, s)).toEqual({
          unnamed: [],
          indexed: 1,
          segments: 1,
          pending: [],
        });
      }
    });

    it('fences out a compactor that paused past its lease', async () => {
      await appendMany(8);
      const expected = await readAll(world, T, S);
      // The first compactor stops right after taking the lease...
      await expect(
        world
          .compactor({
            crash: (step) => {
              if (step === 'lease-acquired') throw new CrashInjectedError(step);
            },
          })
          .run(),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      // ...so the stream is busy until the lease has expired, then the next one takes over.
      expect(await world.compactor().run()).toMatchObject({ busy: 1, compacted: 0 });
      advance(LEASE + 1);
      expect(await world.compactor().run()).toMatchObject({ compacted: 1 });
      expect(await readAll(world, T, S)).toEqual(expected);
    });
  });
});
