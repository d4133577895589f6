import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamIndexPk } from '../../shared/chain/storage-keys.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  batch,
  compactionWorld,
  type ManualClock,
  manualClock,
  partition,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The tenant's stream index (docs/records-v2.md) and GET /v1/streams's service: streams in id order, by prefix,
 * paged by an exclusive cursor, with head seq, update time and the lease; across tenants.
 */

const T = 'acme';
const DAY = 86_400_000;

describe.each(allStores.filter((f) => f.enabled))('stream list on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  const append = (stream: string, tenant = T, n = 1) =>
    world.ledger.appender.append({ tenant, stream, events: batch('e', n) });
  const list = (req: { prefix?: string; after?: string; limit?: number }, tenant = T) =>
    world.ledger.streamList.list(tenant, req);
  const ids = (page: { streams: Array<{ streamId: string }> }) =>
    page.streams.map((s) => s.streamId);

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock(1_800_000_000_000);
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it("lists the tenant's streams in id order with head seq and update time", async () => {
    await append('run-b', T, 3);
    clock.advance(1000);
    await append('run-a');
    await append('other', 'globex');

    const page = await list({});

    expect(page).toEqual({
      streams: [
        { streamId: 'run-a', seq: 1, updatedAt: clock.now(), lease: null },
        { streamId: 'run-b', seq: 3, updatedAt: clock.now() - 1000, lease: null },
      ],
      next: null,
    });
    expect(ids(await list({}, 'globex'))).toEqual(['other']);
    expect(await list({}, 'initech')).toEqual({ streams: [], next: null });
  });

  it('searches by prefix and pages with the exclusive cursor to the end', async () => {
    for (const id of ['a-1', 'run-1', 'run-2', 'run-3', 'run-4', 'run-5', 'z-1']) {
      await append(id);
    }

    const first = await list({ prefix: 'run-', limit: 2 });
    const second = await list({ prefix: 'run-', limit: 2, after: first.next ?? '' });
    const third = await list({ prefix: 'run-', limit: 2, after: second.next ?? '' });

    expect([ids(first), first.next]).toEqual([['run-1', 'run-2'], 'run-2']);
    expect([ids(second), second.next]).toEqual([['run-3', 'run-4'], 'run-4']);
    expect([ids(third), third.next]).toEqual([['run-5'], null]);
    expect(ids(await list({ prefix: 'run-', after: 'a' }))).toHaveLength(5);
    expect(ids(await list({ prefix: 'run-', after: 's' }))).toEqual([]);
    expect(ids(await list({ after: 'run-4' }))).toEqual(['run-5', 'z-1']);
  });

  it('writes one index row per stream, not one per append', async () => {
    for (let i = 0; i < 5; i++) await append('run-1');

    expect(await partition(stores.records, streamIndexPk(T))).toHaveLength(1);
  });

  it('lists a fork as soon as it exists', async () => {
    await world.ledger.checkpoints.checkpoint({
      tenant: T,
      stream: 'run-1',
      ops: [{ op: 'set', path: '/x', value: 1 }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
    });

    await world.ledger.checkpoints.fork({
      tenant: T,
      source: 'run-1',
      at: 1,
      newStreamId: 'run-2',
    });

    expect(ids(await list({}))).toEqual(['run-1', 'run-2']);
  });

  it('shows the lease while it is held, and none once released or expired', async () => {
    await append('run-1');
    await append('run-2');
    const lease = await world.ledger.leases.acquire(T, 'run-1', 'worker-a', 5000);
    await world.ledger.leases.acquire(T, 'run-2', 'worker-b', 5000);
    await world.ledger.leases.release(T, 'run-2', 'worker-b', 1);

    const held = await list({});

    expect(held.streams.map((s) => s.lease)).toEqual([
      { owner: 'worker-a', epoch: lease.epoch, draining: false, expiresAt: clock.now() + 5000 },
      null,
    ]);
    clock.advance(5000);
    expect((await list({})).streams.map((s) => s.lease)).toEqual([null, null]);
  });

  it('drops a stream deleted by retention, and its row with it', async () => {
    await append('run-1');
    await append('run-2');
    await world.ledger.retention.set(T, 'run-1', { ttlMs: DAY });
    clock.advance(DAY);
    await world.compactor().run();

    // Marked deleting: already out of the list, then gone with its row.
    expect(ids(await list({}))).toEqual(['run-2']);
    await settle(world, (ms) => clock.advance(ms));
    expect((await partition(stores.records, streamIndexPk(T))).map((i) => i.sk)).toEqual(['run-2']);
    await append('run-1');
    expect(ids(await list({}))).toEqual(['run-1', 'run-2']);
  });
});
