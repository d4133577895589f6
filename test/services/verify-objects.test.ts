import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type SnapshotIndexRecord, toSnapshotIndex } from '../../shared/chain/layout.js';
import {
  chunkKey,
  SNAPSHOT_INDEX_PREFIX,
  snapshotIndexKey,
  streamPk,
} from '../../shared/chain/storage-keys.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
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

/**
 * Issue 11 item 8: a base snapshot with a flipped byte, or deleted, made state reads fail while
 * /verify still answered ok. The Verifier now covers every object reads depend on: segments,
 * the head, base snapshots and a fork's origin, and names the first bad one.
 */

const T = 'acme';
const S = 'run-1';

const flip = (at: (length: number) => number) => (body: Uint8Array) => {
  const copy = Uint8Array.from(body);
  const i = at(copy.length);
  copy[i] = (copy[i] ?? 0) ^ 0x01;
  return copy;
};

describe.each(allStores.filter((f) => f.enabled))('verify on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const checkpoint = async (value: number, stream = S) => {
    const base = (await world.ledger.appender.readHead(T, stream)).stateDigest;
    return world.ledger.checkpoints.checkpoint({
      tenant: T,
      stream,
      ops: [{ op: 'set', path: `/k${value}`, value: { value, text: `turn ${value}` } }],
      baseDigest: base,
    });
  };
  /** 8 checkpoints between plain events: base snapshots at seqs 6 and 12 (every 3 deltas). */
  const history = async (stream = S) => {
    for (let i = 1; i <= 8; i++) {
      await world.ledger.appender.append({
        tenant: T,
        stream,
        events: [{ type: 'observation', payload: { i } }],
      });
      await checkpoint(i, stream);
    }
  };
  const snapshots = async (stream = S): Promise<SnapshotIndexRecord[]> =>
    (await partition(stores.records, streamPk(T, stream)))
      .filter((i) => i.sk.startsWith(SNAPSHOT_INDEX_PREFIX))
      .map(toSnapshotIndex)
      .sort((a, b) => a.seq - b.seq);
  const snapshotAt = async (seq: number) =>
    (await snapshots()).find((s) => s.seq === seq) ?? expect.fail(`no snapshot at ${seq}`);
  const verify = (stream = S) => world.ledger.verifier.verify(T, stream);

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('answers ok for a stream with snapshots, before and after compaction merged it', async () => {
    await history();
    expect((await snapshots()).map((s) => s.seq)).toEqual([6, 12]);
    const head = await world.ledger.reader.head(T, S);
    expect(await verify()).toEqual({ ok: true, seq: 16, hash: head.hash });
    await settle(world, (ms) => clock.advance(ms));
    const merged = (await keysUnder(stores.objects, `t/${T}/s/${S}/seg/`)).filter((k) =>
      k.includes('-'),
    );
    expect(merged.length).toBeGreaterThan(0);
    expect(await verify()).toEqual({ ok: true, seq: 16, hash: head.hash });
  });

  it.each([
    ['its header', () => 12],
    ['its state', (n: number) => n - 3],
    ['its last byte', (n: number) => n - 1],
  ])(
    'names a base snapshot with a flipped byte in %s, which the chain alone does not see',
    async (_, at) => {
      await history();
      const snap = await snapshotAt(12);
      await stores.tamper(snap.objectKey, flip(at));

      expect(await verify()).toMatchObject({
        ok: false,
        code: 'ErrTamperedLedger',
        object: 'snapshot',
        seq: 12,
        firstBadSeq: 12,
      });
      expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true });
      await expect(world.ledger.states.hydrate(T, S)).rejects.toBeInstanceOf(TamperedLedgerError);
      // Snapshots of other streams are not involved.
      await history('run-2');
      expect(await verify('run-2')).toMatchObject({ ok: true, seq: 16 });
    },
  );

  it('names a base snapshot whose object was deleted', async () => {
    await history();
    await stores.objects.delete((await snapshotAt(6)).objectKey);
    expect(await verify()).toMatchObject({ ok: false, object: 'snapshot', seq: 6 });
  });

  it('names the lowest bad snapshot when several are bad', async () => {
    await history();
    await stores.objects.delete((await snapshotAt(12)).objectKey);
    await stores.tamper(
      (await snapshotAt(6)).objectKey,
      flip((n) => n - 1),
    );
    expect(await verify()).toMatchObject({ ok: false, object: 'snapshot', seq: 6 });
  });

  it('names a snapshot record that names another chain hash', async () => {
    await history();
    await stores.records.update(snapshotIndexKey(T, S, 6), {
      set: { hash: sha256Hex('elsewhere') },
    });
    expect(await verify()).toMatchObject({ ok: false, object: 'snapshot', seq: 6 });
  });

  it('checks snapshots inside merged segments against the chain too', async () => {
    await history();
    await settle(world, (ms) => clock.advance(ms));
    await stores.records.update(snapshotIndexKey(T, S, 6), {
      set: { hash: sha256Hex('elsewhere') },
    });
    expect(await verify()).toMatchObject({ ok: false, object: 'snapshot', seq: 6 });
  });

  it('does not count a snapshot whose record is gone as well (pruned, or never indexed)', async () => {
    await history();
    const snap = await snapshotAt(12);
    await stores.records.delete(snapshotIndexKey(T, S, 12));
    await stores.objects.delete(snap.objectKey);
    expect(await verify()).toMatchObject({ ok: true, seq: 16 });
    expect((await world.ledger.states.hydrate(T, S)).baseSeq).toBe(6);
  });

  describe('of a fork', () => {
    const fork = async () => {
      await history();
      await world.ledger.checkpoints.fork({ tenant: T, source: S, at: 10, newStreamId: 'fork' });
      // Snapshots v2: the origin is the root chunk the fork event names (the state at 10 is
      // no base of the source, so that chunk is the fork's alone).
      const [first] = (await world.ledger.reader.readEvents(T, 'fork', { from: 1, limit: 1 }))
        .events;
      const root = (first?.payload as { root?: { digest: string } } | undefined)?.root;
      return root ? chunkKey(T, root.digest) : expect.fail('no origin root');
    };

    it('answers ok', async () => {
      await fork();
      await checkpoint(50, 'fork');
      expect(await verify('fork')).toMatchObject({ ok: true, seq: 2 });
    });

    it('names an origin snapshot with a flipped byte', async () => {
      const origin = await fork();
      await stores.tamper(
        origin,
        flip((n) => n - 2),
      );
      expect(await verify('fork')).toEqual(
        expect.objectContaining({ ok: false, object: 'fork-origin', seq: 0, firstBadSeq: 1 }),
      );
      expect(await world.ledger.reader.verify(T, 'fork')).toMatchObject({ ok: true });
      expect(await verify()).toMatchObject({ ok: true }); // the source is untouched
    });

    it('names an origin snapshot that was deleted', async () => {
      const origin = await fork();
      await stores.objects.delete(origin);
      expect(await verify('fork')).toMatchObject({ ok: false, object: 'fork-origin', seq: 0 });
      // A new process: this one's chunk cache still holds the (verified) chunk.
      const fresh = compactionWorld(stores, {}, clock);
      await expect(fresh.ledger.states.hydrate(T, 'fork')).rejects.toBeInstanceOf(
        TamperedLedgerError,
      );
    });
  });

  it('still names a bad segment first, with its first bad seq', async () => {
    await history();
    const [first] = await keysUnder(stores.objects, `t/${T}/s/${S}/seg/`);
    await stores.tamper(
      first ?? '',
      flip((n) => n - 40),
    );
    await stores.objects.delete((await snapshotAt(6)).objectKey);
    expect(await verify()).toMatchObject({ ok: false, object: 'segment', firstBadSeq: 1 });
  });
});
