import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toHead } from '../../shared/chain/layout.js';
import { headKey, witnessKey } from '../../shared/chain/storage-keys.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import type { WitnessStore } from '../../shared/ports/witness-store.js';
import { readWitness } from '../../shared/proofs/witness.js';
import { batch, compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';
import { makeWitness } from '../support/witness.js';

/**
 * The witness (witness.ts): each compactor run publishes the signed heads of the streams
 * that moved since the last one, one object per tenant, to write-once storage (memory, a
 * directory, an Object Lock bucket on the emulator); audits read every version.
 */

describe.each(allStores.filter((f) => f.enabled))('the witness on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  let witness: WitnessStore;
  let cleanupWitness: () => Promise<void>;
  const clock = manualClock();
  const ring = new KeyRing(new FakeSigner('witness'));
  const keys = ring.verifier();

  beforeEach(async () => {
    stores = await factory.make(clock);
    world = compactionWorld(stores, { signing: ring }, clock);
    ({ witness, cleanupWitness } = await makeWitness(factory.name).then((w) => ({
      witness: w.witness,
      cleanupWitness: w.cleanup,
    })));
  });
  afterEach(async () => {
    await cleanupWitness();
    await stores.cleanup();
  });

  const append = (tenant: string, stream: string, n = 2) => {
    clock.advance(10);
    return world.ledger.appender.append({ tenant, stream, events: batch(stream, n) });
  };
  const run = (w: WitnessStore = witness) => {
    clock.advance(60_000);
    return world.compactor({ witness: w }).run();
  };
  const objects = async (tenant: string) =>
    (await witness.versions(`w/${tenant}/`)).map((v) => JSON.parse(Buffer.from(v.body).toString()));

  it('publishes the heads of the streams that moved since the last run, one object per tenant per run', async () => {
    await append('acme', 'a', 3);
    await append('acme', 'b', 1);
    await append('acme', 'a', 2);
    await append('beta', 'a', 4);
    const first = await run();
    expect(first).toMatchObject({ headsWitnessed: 3, witnessObjects: 2 });
    const acme = await objects('acme');
    expect(acme).toHaveLength(1);
    expect(
      acme[0].heads
        .map((h: { streamId: string; treeSize: number }) => [h.streamId, h.treeSize])
        .sort(),
    ).toEqual([
      ['a', 5],
      ['b', 1],
    ]);
    const read = await readWitness(witness, keys, 'beta', 'a');
    expect(read.invalid).toEqual([]);
    expect(read.heads.map((h) => h.head.treeSize)).toEqual([4]);
    // Published: markers gone, witPending cleared.
    expect(await stores.records.get(witnessKey('acme', 'a'))).toBeUndefined();
    expect(
      toHead((await stores.records.get(headKey('acme', 'a'))) ?? expect.fail()).witPending,
    ).toBeUndefined();

    // Nothing moved: nothing published.
    expect(await run()).toMatchObject({ headsWitnessed: 0, witnessObjects: 0 });
    // One stream moved: one object with its head.
    await append('acme', 'b', 2);
    expect(await run()).toMatchObject({ headsWitnessed: 1, witnessObjects: 1 });
    const b = await readWitness(witness, keys, 'acme', 'b');
    expect(b.heads.map((h) => h.head.treeSize)).toEqual([1, 3]);
    expect((await readWitness(witness, keys, 'acme')).heads).toHaveLength(3);
  });

  it('a stream that moves while its head is published keeps its marker for the next run', async () => {
    await append('acme', 'a', 3);
    const racing: WitnessStore = {
      publish: async (key, body) => {
        await witness.publish(key, body);
        await append('acme', 'a', 1); // the head moves after it was read
      },
      versions: (prefix) => witness.versions(prefix),
    };
    expect(await run(racing)).toMatchObject({ headsWitnessed: 1 });
    expect(await stores.records.get(witnessKey('acme', 'a'))).toBeDefined();
    expect(await run()).toMatchObject({ headsWitnessed: 1 });
    const sizes = (await readWitness(witness, keys, 'acme', 'a')).heads.map((h) => h.head.treeSize);
    expect(sizes).toEqual([3, 4]);
    expect(await stores.records.get(witnessKey('acme', 'a'))).toBeUndefined();
  });

  it('reports a forged witness version beside the genuine ones', async () => {
    await append('acme', 'a', 3);
    await run();
    const [genuine] = await objects('acme');
    const forged = { ...genuine, heads: [{ ...genuine.heads[0], treeSize: 2 }] };
    await witness.publish(
      'w/acme/0000000000000001-forged.json',
      Buffer.from(JSON.stringify(forged)),
    );
    const read = await readWitness(witness, keys, 'acme', 'a');
    expect(read.heads.map((h) => h.head.treeSize)).toEqual([3]);
    expect(read.invalid).toEqual([expect.stringContaining('bad tree head signature')]);
  });
});
