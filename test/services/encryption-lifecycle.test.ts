import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { streamKeyKey } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { compactionWorld, type ManualClock, manualClock, settle } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The stream key across a stream's lives (docs/privacy.md, Decision 3): a stream deleted and
 * recreated gets a key record of its own (the compactor deleted the old one with the stream),
 * even in a process that still holds the old key cached; a new process reads it back.
 */

const T = 'acme';
const S = 'run-1';

describe.each(allStores.filter((f) => f.enabled))('stream key lifecycle on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  const wrapper = new MemoryKeyWrapper();
  const world = (keyring = new StreamKeyring(stores.records, wrapper)) => {
    const w = compactionWorld(stores, {}, clock);
    const ledger = new Ledger({ ...stores, clock, keyring }, { markEvery: 4, snapshotEvery: 3 });
    return { ...w, ledger };
  };
  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
  });
  afterEach(() => stores.cleanup());

  it('a recreated stream writes a new key record; a new process reads it', async () => {
    const w = world();
    const append = (label: string) =>
      w.ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'user.message', payload: { label } }],
      });
    await append('first life');
    expect(await w.ledger.reader.readEvents(T, S)).toBeTruthy(); // the key is cached
    await w.ledger.streamDeleter.delete(T, S);
    await settle(w, (ms) => clock.advance(ms));
    expect(await stores.records.get(streamKeyKey(T, S))).toBeUndefined();

    await append('second life');
    expect(await stores.records.get(streamKeyKey(T, S))).toBeDefined();
    const reopened = world();
    const page = await reopened.ledger.reader.readEvents(T, S);
    expect(page.events.map((e) => e.payload)).toEqual([{ label: 'second life' }]);
  });
});
