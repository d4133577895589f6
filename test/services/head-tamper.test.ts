import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toHead } from '../../shared/chain/layout.js';
import { headKey, segmentKey, streamPk } from '../../shared/chain/storage-keys.js';
import {
  StreamNotFoundError,
  TamperedLedgerError,
  UnavailableError,
} from '../../shared/domain/errors.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import {
  batch,
  compactionWorld,
  crashAt,
  keysUnder,
  type ManualClock,
  manualClock,
  partition,
  readAll,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 11 items 9 and 10: the chain head is the one mutable pointer of a stream. Edited, reads
 * served every event and the next append chained onto the forged hash; deleted, the stream read
 * as 404 and every append answered 503 "too contended" forever. Both now fail closed with
 * ErrTamperedLedger (object `head`), the commit refuses a head that is not the chain end inside
 * its transaction, and the operator repair rebuilds the head from the verified segments. A
 * stream being deleted by retention keeps its head as a tombstone and reads as not found.
 */

const T = 'acme';
const S = 'run-1';
const DAY = 86_400_000;
const FORGED = sha256Hex('not the chain end');

/** A RecordStore that counts the calls reaching it. */
const countingRecords = (inner: RecordStore) => {
  const counts = { get: 0, query: 0, transact: 0, put: 0, update: 0, delete: 0 };
  const counted =
    <A extends unknown[], R>(name: keyof typeof counts, call: (...args: A) => R) =>
    (...args: A): R => {
      counts[name]++;
      return call(...args);
    };
  const store: RecordStore = {
    get: counted('get', (key) => inner.get(key)),
    put: counted('put', (item, o) => inner.put(item, o)),
    update: counted('update', (key, u, o) => inner.update(key, u, o)),
    delete: counted('delete', (key, o) => inner.delete(key, o)),
    transact: counted('transact', (ops) => inner.transact(ops)),
    query: counted('query', (pk, o) => inner.query(pk, o)),
  };
  return { store, counts };
};

describe.each(allStores.filter((f) => f.enabled))('the chain head on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const append = (events = batch('e'), stream = S, tenant = T) =>
    world.ledger.appender.append({ tenant, stream, events });
  const checkpoint = async (value: number, stream = S) => {
    const base = (await world.ledger.appender.readHead(T, stream)).stateDigest;
    return world.ledger.checkpoints.checkpoint({
      tenant: T,
      stream,
      ops: [{ op: 'set', path: `/k${value}`, value }],
      baseDigest: base,
    });
  };
  /** Events, checkpoints (snapshots every 3) and a second stream and tenant beside it. */
  const history = async () => {
    for (let i = 1; i <= 4; i++) {
      await append(batch(`a${i}`, 2));
      await checkpoint(i);
      clock.advance(1000);
    }
    await append(batch('other'), 'run-2');
    await append(batch('elsewhere'), S, 'globex');
  };
  const headItem = () => stores.records.get(headKey(T, S));
  const expectTamperedHead = async (promise: Promise<unknown>) => {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TamperedLedgerError);
    expect(err).toMatchObject({ code: 'ErrTamperedLedger', object: 'head' });
  };
  const othersStillWork = async () => {
    expect((await append(batch('more'), 'run-2')).response.lastSeq).toBe(2);
    expect((await append(batch('more'), S, 'globex')).response.lastSeq).toBe(2);
    expect(await world.ledger.verifier.verify(T, 'run-2')).toMatchObject({ ok: true, seq: 2 });
    expect(await world.ledger.verifier.verify('globex', S)).toMatchObject({ ok: true, seq: 2 });
  };

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  describe('with its hash edited', () => {
    it('fails reads, state, verify and appends closed, and writes nothing', async () => {
      await history();
      const events = await readAll(world, T, S);
      await stores.records.update(headKey(T, S), { set: { hash: FORGED } });
      const forgedHead = await headItem();
      const objectsBefore = await keysUnder(stores.objects, `t/${T}/s/${S}/`);

      const { reader, states, verifier } = world.ledger;
      await expectTamperedHead(reader.readEvents(T, S));
      await expectTamperedHead(reader.readEvents(T, S, { from: 3, limit: 2 }));
      await expectTamperedHead(reader.readEvents(T, S, { from: 99 }));
      await expectTamperedHead(reader.checkedHead(T, S));
      await expectTamperedHead(states.hydrate(T, S));
      await expectTamperedHead(states.hydrate(T, S, 9)); // the base's own seq: no events read
      expect(await verifier.verify(T, S)).toMatchObject({
        ok: false,
        code: 'ErrTamperedLedger',
        object: 'head',
        seq: 12,
      });
      await expectTamperedHead(append(batch('chained on the forgery')));
      await expectTamperedHead(checkpoint(99));

      expect(await headItem()).toEqual(forgedHead);
      // Only the refused append's segment, uncommitted at head+1 and chained on the forgery.
      const objectsAfter = await keysUnder(stores.objects, `t/${T}/s/${S}/`);
      expect(objectsAfter.sort()).toEqual([...objectsBefore, segmentKey(T, S, 13)].sort());
      expect(events).toHaveLength(12);
      await othersStillWork();
    });

    it('is refused by the commit transaction itself, not by another read', async () => {
      await history();
      const counted = countingRecords(stores.records);
      const ledger = new Ledger({ objects: stores.objects, records: counted.store, clock });
      const head = await ledger.appender.readHead(T, S);
      counted.counts.get = 0;
      // A writer that read the head just before it was edited: it chains on what it read.
      await stores.records.update(headKey(T, S), { set: { hash: FORGED } });
      const req = { tenant: T, stream: S, events: batch('late') };
      await expectTamperedHead(
        ledger.appender.append({ ...req, knownHead: { ...head, hash: FORGED } }),
      );
      // the gets: the index record of the segment ending at the head (this process's first
      // append of the stream asks the chain whether it is clear: a format 1 segment that
      // ends elsewhere than the forged hash is left to the commit), and the read after
      expect(counted.counts).toMatchObject({ get: 2, query: 0, transact: 1 });
      // An append to a sound stream costs what it did: one head read, one transaction, once
      // this process knows the stream's chain clear (its first append of a stream written by
      // another process reads the index record and the segment ending at the head once).
      counted.counts.get = 0;
      counted.counts.transact = 0;
      expect((await ledger.appender.append({ ...req, stream: 'run-2' })).response.lastSeq).toBe(2);
      expect(counted.counts).toMatchObject({ get: 2, query: 0, transact: 1 });
      counted.counts.get = 0;
      counted.counts.transact = 0;
      expect((await ledger.appender.append({ ...req, stream: 'run-2' })).response.lastSeq).toBe(3);
      expect(counted.counts).toMatchObject({ get: 1, query: 0, transact: 1 });
      // Once the head is put right, the append that was refused leaves nothing in the way.
      await stores.records.update(headKey(T, S), { set: { hash: head.hash } });
      expect((await ledger.appender.append(req)).response.lastSeq).toBe(13);
    });

    it('is repaired from the verified segments, and the stream goes on', async () => {
      await history();
      const events = await readAll(world, T, S);
      const original = toHead((await headItem()) ?? expect.fail('no head'));
      await stores.records.update(headKey(T, S), { set: { hash: FORGED } });
      await expectTamperedHead(append(batch('chained on the forgery')));

      const result = await world.ledger.repair.repair(T, S);
      expect(result).toEqual({
        repaired: true,
        before: { seq: 12, hash: FORGED },
        head: {
          seq: 12,
          hash: original.hash,
          stateDigest: original.stateDigest,
          deltas: 4,
          stateSeq: original.stateSeq,
        },
      });
      expect(toHead((await headItem()) ?? expect.fail('no head'))).toMatchObject({
        ...original,
        updatedAt: clock.now(),
      });
      expect(await readAll(world, T, S)).toEqual(events);
      expect((await append(batch('after'))).response).toMatchObject({ firstSeq: 13 });
      expect(await world.ledger.verifier.verify(T, S)).toMatchObject({ ok: true, seq: 13 });
      expect(await world.ledger.repair.repair(T, S)).toMatchObject({ repaired: false });
    });

    it('lets the first append after the repair take the place of what was chained on the forgery', async () => {
      await history();
      await stores.records.update(headKey(T, S), { set: { hash: FORGED } });
      await expectTamperedHead(append(batch('on the forgery')));
      await expectTamperedHead(append(batch('on the forgery, again')));
      const stranded = await stores.objects.get(segmentKey(T, S, 13));
      expect(stranded).toBeDefined();

      await world.ledger.repair.repair(T, S);
      expect((await append(batch('after'))).response).toMatchObject({ firstSeq: 13, lastSeq: 13 });
      const events = await readAll(world, T, S);
      expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
      expect(events[12]?.payload).toEqual({ label: 'after', i: 0 });
      expect(await world.ledger.verifier.verify(T, S)).toMatchObject({ ok: true, seq: 13 });
    });
  });

  describe('deleted', () => {
    it('fails reads, verify and appends closed with ErrTamperedLedger, not 404 or 503', async () => {
      await history();
      const objectsBefore = await keysUnder(stores.objects, `t/${T}/s/${S}/`);
      await stores.records.delete(headKey(T, S));

      const { reader, states, verifier } = world.ledger;
      await expectTamperedHead(reader.head(T, S));
      await expectTamperedHead(reader.readEvents(T, S));
      await expectTamperedHead(states.hydrate(T, S));
      expect(await verifier.verify(T, S)).toMatchObject({ ok: false, object: 'head', seq: 1 });
      const err = await append().catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(UnavailableError);
      await expectTamperedHead(append());
      await expectTamperedHead(checkpoint(99));
      expect(await headItem()).toBeUndefined();
      expect(await keysUnder(stores.objects, `t/${T}/s/${S}/`)).toEqual(objectsBefore);
      await othersStillWork();
    });

    it('is rebuilt exactly by the repair', async () => {
      await history();
      const events = await readAll(world, T, S);
      const state = await world.ledger.states.hydrate(T, S);
      const original = toHead((await headItem()) ?? expect.fail('no head'));
      await stores.records.delete(headKey(T, S));

      const result = await world.ledger.repair.repair(T, S);
      expect(result).toMatchObject({ repaired: true, before: null });
      const rebuilt = toHead((await headItem()) ?? expect.fail('no head'));
      // The incarnation is not on the chain: a rebuilt head starts a new one at its next
      // commit (docs/records-v2.md, "Idempotency records"), so it is all the repair cannot
      // rebuild; everything the chain holds must come back as it was.
      const { updatedAt: _, pending: __, incarnation: ___, ...kept } = original;
      expect(rebuilt).toMatchObject(kept);
      expect(await readAll(world, T, S)).toEqual(events);
      expect(await world.ledger.states.hydrate(T, S)).toEqual(state);
      expect((await checkpoint(5)).seq).toBe(13);
      expect(await world.ledger.verifier.verify(T, S)).toMatchObject({ ok: true, seq: 13 });
    });

    it('is rebuilt after a pruning point, from the base snapshot written there', async () => {
      for (let i = 1; i <= 6; i++) {
        await append(batch(`old${i}`));
        await checkpoint(i);
        clock.advance(1000);
      }
      clock.advance(DAY);
      await append(batch('new'));
      await world.ledger.retention.set(T, S, { pruneAfterMs: DAY });
      await settle(world, (ms) => clock.advance(ms));
      const view = await world.ledger.retention.get(T, S);
      expect(view.prunedSeq).toBeGreaterThan(0);
      const events = await readAll(world, T, S);
      const original = toHead((await headItem()) ?? expect.fail('no head'));
      await stores.records.delete(headKey(T, S));

      const result = await world.ledger.repair.repair(T, S);
      expect(result).toMatchObject({ repaired: true, prunedSeq: view.prunedSeq });
      expect(toHead((await headItem()) ?? expect.fail('no head'))).toMatchObject({
        seq: original.seq,
        hash: original.hash,
        stateDigest: original.stateDigest,
        prunedSeq: original.prunedSeq,
        prunedHash: original.prunedHash,
      });
      expect(await readAll(world, T, S)).toEqual(events);
      const verified = await world.ledger.verifier.verify(T, S);
      expect(verified, JSON.stringify(verified)).toMatchObject({ ok: true });
    });

    it('is not repaired from a chain that does not verify', async () => {
      await history();
      await stores.records.delete(headKey(T, S));
      await stores.tamper(segmentKey(T, S, 3), (b) => {
        const copy = Uint8Array.from(b);
        copy[copy.length - 40] = (copy[copy.length - 40] ?? 0) ^ 1;
        return copy;
      });
      await expect(world.ledger.repair.repair(T, S)).rejects.toBeInstanceOf(TamperedLedgerError);
      expect(await headItem()).toBeUndefined();
    });

    it('answers StreamNotFound for a stream that never existed, to reads and the repair', async () => {
      await expect(world.ledger.reader.readEvents(T, 'nope')).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      await expect(world.ledger.repair.repair(T, 'nope')).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
      expect((await append(batch('new'), 'nope')).response.firstSeq).toBe(1);
    });
  });

  describe('of a stream being deleted by retention', () => {
    it.each(['deletion-marked', 'stream-objects-deleted', 'stream-records-deleted'] as const)(
      'stays a tombstone: not found, never tampered, after a crash at %s',
      async (step) => {
        await history();
        await world.ledger.retention.set(T, S, { ttlMs: 1000 });
        clock.advance(2000);
        for (let run = 0; run < 4; run++) {
          const crashed = await world
            .compactor({ crash: crashAt(step) })
            .run()
            .then(
              () => false,
              () => true,
            );
          if (crashed) break;
          clock.advance(60_000);
        }
        const { reader, states, verifier, repair } = world.ledger;
        await expect(reader.readEvents(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        await expect(reader.head(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        await expect(verifier.verify(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        await expect(states.hydrate(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        await expect(append()).rejects.toBeInstanceOf(StreamNotFoundError);
        await expect(repair.repair(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        expect((await headItem())?.status).toBe('deleting');

        await settle(world, (ms) => clock.advance(ms));
        expect(await partition(stores.records, streamPk(T, S))).toEqual([]);
        await expect(reader.readEvents(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
        expect((await append(batch('new'))).response.firstSeq).toBe(1);
        expect(await verifier.verify(T, S)).toMatchObject({ ok: true, seq: 1 });
      },
    );
  });

  it('starts a new stream from an empty state as before', async () => {
    expect((await checkpoint(1, 'fresh')).seq).toBe(1);
    expect((await world.ledger.appender.readHead(T, 'never')).stateDigest).toBe(
      EMPTY_STATE_DIGEST_V2,
    );
  });
});
