import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toSegmentIndex } from '../../shared/chain/layout.js';
import {
  chunkKey,
  headKey,
  SEGMENT_INDEX_PREFIX,
  snapshotIndexKey,
  streamPk,
} from '../../shared/chain/storage-keys.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { chunksOfValue, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import type { Item } from '../../shared/ports/record-store.js';
import { readStateValue } from '../../shared/state/state-read.js';
import {
  compactionWorld,
  type ManualClock,
  manualClock,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 items 1 and 3: what /verify and the reads check beyond the segments. A value set by
 * ref whose chunk is flipped or deleted; the head's state digest or stateSeq edited; the base
 * at a pruning point, bound by the segment retention keeps for its checkpoint.
 */

const T = 'acme';
const DAY = 86_400_000;

describe.each(allStores.filter((f) => f.enabled))('bindings /verify checks on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, { snapshotEvery: 100 }, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const fresh = () => compactionWorld(stores, { snapshotEvery: 100 }, clock);
  const checkpoint = async (stream: string, ops: DeltaOp[]) => {
    const { stateDigest } = await world.ledger.appender.readHead(T, stream);
    return world.ledger.checkpoints.checkpoint({ tenant: T, stream, ops, baseDigest: stateDigest });
  };
  const set = (i: number): DeltaOp[] => [{ op: 'set', path: `/k${i}`, value: i }];

  describe('a value set by ref, in a delta after the newest base', () => {
    const withRef = async () => {
      const value = { rows: Array.from({ length: 50 }, (_, i) => `row ${i}`.padEnd(200, '.')) };
      const { ref, chunks } = chunksOfValue(value as never);
      for (const c of chunks) await world.ledger.states.values.putChunk(T, c.hash, c.bytes);
      await checkpoint('docs', set(1));
      const r = await checkpoint('docs', [{ op: 'set', path: '/doc', ref } as unknown as DeltaOp]);
      await checkpoint('docs', set(3));
      return { seq: r.seq, hashes: chunks.map((c) => c.hash) };
    };

    it('is reported by /verify when one of its chunks is flipped, as state reads fail', async () => {
      const { seq, hashes } = await withRef();
      expect(await fresh().ledger.verifier.verify(T, 'docs')).toMatchObject({ ok: true });
      await stores.tamper(chunkKey(T, hashes[0] as string), (b) => {
        const c = Uint8Array.from(b);
        c[c.length - 1] = (c[c.length - 1] ?? 0) ^ 1;
        return c;
      });
      const w = fresh();
      await expect(w.ledger.states.hydrate(T, 'docs')).rejects.toBeInstanceOf(TamperedLedgerError);
      expect(await w.ledger.verifier.verify(T, 'docs')).toMatchObject({
        ok: false,
        code: 'ErrTamperedLedger',
        object: 'value',
        seq,
        firstBadSeq: seq,
      });
    });

    it('is reported by /verify when one of its chunks is deleted', async () => {
      const { seq, hashes } = await withRef();
      await stores.objects.delete(chunkKey(T, hashes.at(-1) as string));
      expect(await fresh().ledger.verifier.verify(T, 'docs')).toMatchObject({
        ok: false,
        object: 'value',
        seq,
      });
    });
  });

  describe("the head's state", () => {
    it('is reported when its digest is edited, and a path read at the head fails closed', async () => {
      for (let i = 1; i <= 3; i++) await checkpoint('s', set(i));
      const forged = (await checkpoint('other', set(9))).stateDigest;
      await stores.records.update(headKey(T, 's'), { set: { stateDigest: forged } });
      const w = fresh();
      expect(await w.ledger.verifier.verify(T, 's')).toMatchObject({ ok: false, object: 'head' });
      await expect(
        readStateValue(w.ledger.states, { tenant: T, stream: 's', path: '/k1', proof: true }),
      ).rejects.toMatchObject({ code: 'ErrTamperedLedger', object: 'head' });
      await expect(w.ledger.states.hydrate(T, 's')).rejects.toMatchObject({ object: 'head' });
    });

    it('is reported when its stateSeq is moved back to an older checkpoint with its digest', async () => {
      world = compactionWorld(stores, { snapshotEvery: 2 }, clock);
      const first = await checkpoint('s', set(1));
      await checkpoint('s', set(2)); // a base at 2
      await checkpoint('s', set(3));
      await stores.records.update(headKey(T, 's'), {
        set: { stateSeq: first.seq, stateDigest: first.stateDigest },
      });
      const w = fresh();
      expect(await w.ledger.verifier.verify(T, 's')).toMatchObject({ ok: false, object: 'head' });
      await expect(
        readStateValue(w.ledger.states, { tenant: T, stream: 's', path: '/k1' }),
      ).rejects.toMatchObject({ code: 'ErrTamperedLedger', object: 'head' });
    });
  });

  describe('the base at a pruning point', () => {
    /** Checkpoints at 1..4 (a base at 4), events 5..8, then pruned at 8. */
    const pruned = async () => {
      world = compactionWorld(stores, { snapshotEvery: 4 }, clock);
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let i = 1; i <= 4; i++) {
        digest = (
          await world.ledger.checkpoints.checkpoint({
            tenant: T,
            stream: 's',
            ops: set(i),
            baseDigest: digest,
          })
        ).stateDigest;
      }
      for (let i = 0; i < 4; i++) {
        await world.ledger.appender.append({
          tenant: T,
          stream: 's',
          events: [{ type: 'note', payload: { i } }],
        });
      }
      clock.advance(DAY);
      await world.ledger.appender.append({
        tenant: T,
        stream: 's',
        events: [{ type: 'note', payload: { late: true } }],
      }); // 9, kept
      await world.ledger.retention.set(T, 's', { pruneAfterMs: DAY - 1 });
      for (let i = 0; i < 6; i++) {
        clock.advance(20_000);
        await world.compactor().run();
      }
      const head = await world.ledger.reader.head(T, 's');
      expect(head.prunedSeq).toBe(8);
      return digest;
    };

    it('is bound by the kept segment of its checkpoint: honest reads and /verify pass', async () => {
      const digest = await pruned();
      const index = await stores.records.query(streamPk(T, 's'), {
        skPrefix: SEGMENT_INDEX_PREFIX,
      });
      const kept = index.items.map((i) => toSegmentIndex(i));
      // The segment of seq 4 (the last checkpoint at or before 8) and those after it.
      expect(kept[0]?.firstSeq).toBe(4);
      const w = fresh();
      expect((await w.ledger.states.hydrate(T, 's', 8)).stateDigest).toBe(digest);
      expect(await w.ledger.verifier.verify(T, 's')).toMatchObject({ ok: true, seq: 9 });
      expect(
        (await readStateValue(w.ledger.states, { tenant: T, stream: 's', path: '/k4' })).value,
      ).toBe(4);
    });

    it('fails closed when the base there is forged, or the kept segment is deleted', async () => {
      await pruned();
      const floor = snapshotIndexKey(T, 's', 8);
      const honest = (await stores.records.get(floor)) as Item;
      // Point the floor record at the base of seq 4's state digest of another stream.
      const other = (await checkpoint('other', set(99))).stateDigest;
      await stores.records.put({ ...honest, stateDigest: other });
      let w = fresh();
      await expect(w.ledger.states.hydrate(T, 's')).rejects.toMatchObject({
        code: 'ErrTamperedLedger',
        object: 'snapshot',
      });
      expect(await w.ledger.verifier.verify(T, 's')).toMatchObject({
        ok: false,
        object: 'snapshot',
        seq: 8,
      });

      await stores.records.put(honest);
      const index = await stores.records.query(streamPk(T, 's'), {
        skPrefix: SEGMENT_INDEX_PREFIX,
      });
      const first = index.items[0] as Item;
      await stores.objects.delete(toSegmentIndex(first).objectKey);
      w = fresh();
      await expect(w.ledger.states.hydrate(T, 's')).rejects.toBeInstanceOf(TamperedLedgerError);
      expect(await w.ledger.verifier.verify(T, 's')).toMatchObject({ ok: false });
    });
  });
});
