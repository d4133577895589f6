import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import { headKey } from '../../shared/chain/storage-keys.js';
import { eventLeafHash, MemoryTree, verifyInclusion } from '../../shared/domain/merkle/index.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { PROOF_CONCURRENCY, ProofService } from '../../shared/proofs/proofs.js';
import { batch, compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Concurrent proofs leave the event loop its turns (issue 21: /healthz under 100 ms during 20
 * concurrent proofs). On the embedded stores every read resolves at once, so 20 proofs used
 * to run as one stretch of microtasks: nothing else (a /healthz) ran until all were done. Now
 * at most PROOF_CONCURRENCY proofs compute at once, each giving the loop a turn before each
 * batch of hashes. Counted in loop turns and proofs, not in time.
 */

const unhex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe.each(allStores.filter((f) => f.enabled))('concurrent proofs on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const clock = manualClock();
  const ring = new KeyRing(new FakeSigner('turns'));

  beforeEach(async () => {
    stores = await factory.make(clock);
    world = compactionWorld(stores, { signing: ring, markEvery: 100_000 }, clock);
    for (let done = 0; done < 400; done += 20) {
      clock.advance(10);
      await world.ledger.appender.append({ tenant: 'acme', stream: 'p', events: batch('p', 20) });
    }
  });
  afterEach(() => stores.cleanup());

  const service = (records: RecordStore = stores.records) =>
    new ProofService({
      objects: stores.objects,
      records,
      reader: new Reader({ objects: stores.objects, records }),
      clock,
      signing: ring,
    });

  it('computes at most PROOF_CONCURRENCY proofs at once; the others wait their turn', {
    timeout: 120_000,
  }, async () => {
    // Each proof reads the stream's tiles record once, early: held there until released.
    let reached = 0;
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const records: RecordStore = {
      ...stores.records,
      get: async (key) => {
        if (key.sk === 'tiles') {
          reached++;
          await held;
        }
        return stores.records.get(key);
      },
      put: (item, options) => stores.records.put(item, options),
      update: (key, update, options) => stores.records.update(key, update, options),
      delete: (key, options) => stores.records.delete(key, options),
      transact: (ops) => stores.records.transact(ops),
      query: (pk, options) => stores.records.query(pk, options),
    };
    const proofs = service(records);
    const all = Array.from({ length: 20 }, (_, i) => proofs.inclusion('acme', 'p', 1 + i * 19));
    while (reached < PROOF_CONCURRENCY) await turn();
    // As long again as the first ones took to get there (reads of the same store): others
    // computing at once would have got there too.
    for (let i = 0; i < 3; i++) await stores.records.get(headKey('acme', 'p'));
    for (let i = 0; i < 50; i++) await turn();
    expect(reached).toBe(PROOF_CONCURRENCY);
    release();
    const done = await Promise.all(all);
    expect(reached).toBe(20);
    const tree = new MemoryTree();
    const events = await world.ledger.reader.readEvents('acme', 'p', { limit: 1000 });
    for (const e of events.events) tree.append(eventLeafHash(e.hash));
    done.forEach((p, i) => {
      const leaf = tree.node(0, i * 19);
      expect(verifyInclusion(leaf, i * 19, 400, p.path.map(unhex), tree.root())).toBe(true);
    });
  });

  it('lets the event loop run while 20 proofs are computed', {
    timeout: 120_000,
  }, async () => {
    const proofs = service();
    let finished = 0;
    const all = Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0
        ? proofs.inclusion('acme', 'p', 1 + i * 19)
        : proofs.consistency('acme', 'p', 1 + i * 19)
      ).then(() => finished++),
    );
    // A callback queued after the 20 requests (as a /healthz would be) runs before they are
    // all done: before any is, as each first waits a turn of the loop.
    let finishedAtProbe = -1;
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        finishedAtProbe = finished;
        resolve();
      }),
    );
    await Promise.all(all);
    expect(finishedAtProbe).toBe(0);
    expect(finished).toBe(20);
  });
});
