import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toSnapshotIndex } from '../../shared/chain/layout.js';
import {
  chunkPrefix,
  SNAPSHOT_INDEX_PREFIX,
  snapshotIndexKey,
  streamPk,
} from '../../shared/chain/storage-keys.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import type { Item } from '../../shared/ports/record-store.js';
import { readStateValue } from '../../shared/state/state-read.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Found by the tamper matrix (test/support/tamper-matrix-suite.ts): an index record copied
 * under another seq's key served another seq's state, and a damaged base or fork origin failed
 * reads as a `segment`. Now a record whose key and body name different seqs is refused, and a
 * read fails naming the object that is bad.
 */

const T = 'acme';
const set = (i: number): DeltaOp[] => [{ op: 'set', path: `/k${i}`, value: i }];

describe.each(allStores.filter((f) => f.enabled))('tampered objects named on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, { snapshotEvery: 2 }, manualClock());
  });
  afterEach(() => stores.cleanup());

  const fresh = () => compactionWorld(stores, { snapshotEvery: 2 }, manualClock()).ledger;
  /** Checkpoints 1..6: bases at 2, 4 and 6. */
  const history = async () => {
    for (let i = 1; i <= 6; i++) {
      const { stateDigest } = await world.ledger.appender.readHead(T, 's');
      await world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream: 's',
        ops: set(i),
        baseDigest: stateDigest,
      });
    }
  };
  const bases = async () =>
    (await stores.records.query(streamPk(T, 's'), { skPrefix: SNAPSHOT_INDEX_PREFIX })).items;

  it("refuses a base record copied under another seq's key, on reads and /verify", async () => {
    await history();
    const at6 = (await stores.records.get(snapshotIndexKey(T, 's', 6))) as Item;
    // The base of 6 put where the base of 2 was: a read of seq 3 found it and answered seq 6's
    // state as seq 3's.
    await stores.records.put({ ...at6, ...snapshotIndexKey(T, 's', 2) });
    const ledger = fresh();
    await expect(ledger.states.hydrate(T, 's', 3)).rejects.toMatchObject({
      code: 'ErrTamperedLedger',
      object: 'snapshot',
    });
    await expect(
      readStateValue(ledger.states, { tenant: T, stream: 's', path: '/k1', at: 3 }),
    ).rejects.toMatchObject({ object: 'snapshot' });
    expect(await ledger.verifier.verify(T, 's')).toMatchObject({ ok: false, object: 'snapshot' });
    expect(() => toSnapshotIndex({ ...at6, ...snapshotIndexKey(T, 's', 2) })).toThrow(
      /names seq 6/,
    );
  });

  it('names a damaged base snapshot, on hydration and on a read by path', async () => {
    await history();
    const newest = toSnapshotIndex((await bases())[0] as Item);
    await stores.tamper(newest.objectKey, (b) => {
      const c = Uint8Array.from(b);
      c[c.length - 1] = (c[c.length - 1] ?? 0) ^ 1;
      return c;
    });
    const ledger = fresh();
    const named = { code: 'ErrTamperedLedger', object: 'snapshot', seq: newest.seq };
    await expect(ledger.states.hydrate(T, 's')).rejects.toMatchObject(named);
    await expect(
      readStateValue(ledger.states, { tenant: T, stream: 's', path: '/k1', proof: true }),
    ).rejects.toMatchObject(named);
  });

  it("names a fork's origin whose chunks are gone", async () => {
    await history();
    await world.ledger.checkpoints.fork({ tenant: T, source: 's', at: 5, newStreamId: 'f' });
    // The origin's chunks are the base's at 4 plus the delta of 5: every chunk of the tenant.
    let after: string | undefined;
    do {
      const page = await stores.objects.list(chunkPrefix(T), { after });
      for (const o of page.items) await stores.objects.delete(o.key);
      after = page.next;
    } while (after !== undefined);
    const ledger = fresh();
    const named = { code: 'ErrTamperedLedger', object: 'fork-origin', seq: 0 };
    await expect(ledger.states.hydrate(T, 'f')).rejects.toMatchObject(named);
    await expect(
      readStateValue(ledger.states, { tenant: T, stream: 'f', path: '/k1' }),
    ).rejects.toMatchObject(named);
  });
});
