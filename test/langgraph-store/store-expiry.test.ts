import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyStateDigest } from '../../packages/client/src/index.js';
import type { HefestoStore } from '../../packages/langgraph/src/index.js';
import { segmentKey, streamIndexKey } from '../../shared/chain/storage-keys.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import { DEFAULT_TENANT } from '../../shared/keys/keys.js';
import type { Checkpointer } from '../../shared/state/checkpoint.js';
import { allStores } from '../support/stores.js';
import { type StoreWorld, startStoreWorld } from './world.js';

/**
 * Expired store items removed by the compactor (compact-expiry.ts): each namespace's
 * checkpoint carries its earliest expiry as the `expiry` hint, whose commit schedules the
 * compactor's visit; the visit deletes what the verified state says expired, by the server's
 * clock, with a checkpoint on the digest it read. And namespaces made before the directory,
 * added to it when a read meets them. On memory, local and the AWS emulators.
 */

const MINUTE = 60_000;
let prefixes = 0;
const fresh = () => `x${prefixes++}`;

const itemsOf = async (store: HefestoStore, stream: string) =>
  Object.keys(((await store.client.getState(stream)).state as { items: object }).items).sort();

describe.each(allStores)('HefestoStore expiry by the compactor ($name)', (factory) => {
  // A world per test: a pass visits every stream of the stores, and counts what it removed.
  let world: StoreWorld;
  beforeEach(async () => {
    if (factory.enabled) world = await startStoreWorld(factory);
  });
  afterEach(async () => world?.close());

  /** Runs compactor passes as the schedule would, `n` of them. */
  const passes = async (n = 1, options = {}) => {
    let removed = 0;
    for (let i = 0; i < n; i++) removed += (await world.compactor(options).run()).entriesExpired;
    return removed;
  };

  describe.skipIf(!factory.enabled)('a pass', () => {
    it('removes an expired item and keeps one unexpired, one without ttl and one refreshed', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['mem'], 'gone', { n: 1 }, undefined, { ttl: 1 });
      await store.put(['mem'], 'read', { n: 2 }, undefined, { ttl: 1 });
      await store.put(['mem'], 'later', { n: 3 }, undefined, { ttl: 10 });
      await store.put(['mem'], 'forever', { n: 4 });
      expect(await passes()).toBe(0); // nothing due yet
      world.advance(40_000);
      expect(await store.get(['mem'], 'read')).not.toBeNull(); // refreshed to now + 1 min
      world.advance(30_000);

      expect(await passes()).toBe(1);

      const other = world.store({ prefix });
      expect(await itemsOf(other, `${prefix}.mem.`)).toEqual(['forever', 'later', 'read']);
      expect(await other.get(['mem'], 'gone')).toBeNull();
      expect((await other.search(['mem'])).map((i) => i.key)).toEqual(['read', 'later', 'forever']);
      // The compactor's checkpoint carried the next expiry: the refreshed item goes in its turn.
      world.advance(MINUTE);
      expect(await passes()).toBe(1);
      expect(await itemsOf(other, `${prefix}.mem.`)).toEqual(['forever', 'later']);
      // The writer's held state moved under it: its next put reads the deltas and goes on.
      await store.put(['mem'], 'next', { n: 5 });
      expect(await itemsOf(other, `${prefix}.mem.`)).toEqual(['forever', 'later', 'next']);
      world.advance(10 * MINUTE);
      expect(await passes()).toBe(1);
      expect(await itemsOf(other, `${prefix}.mem.`)).toEqual(['forever', 'next']);
      expect(await passes()).toBe(0);
    });

    it('removes at most maxExpiredPerVisit items of a namespace per pass, the rest the next', async () => {
      const prefix = fresh();
      const store = world.store({ prefix, ttl: { defaultTtl: 1 } });
      await store.batch(
        ['a', 'b', 'c'].map((key) => ({ namespace: ['m'], key, value: { key } })) as never,
      );
      world.advance(2 * MINUTE);
      expect(await passes(1, { maxExpiredPerVisit: 2 })).toBe(2);
      expect(await itemsOf(store, `${prefix}.m.`)).toHaveLength(1);
      world.advance(1_000); // the next pass
      expect(await passes(1, { maxExpiredPerVisit: 2 })).toBe(1);
      expect(await itemsOf(store, `${prefix}.m.`)).toEqual([]);
    });

    it('visits at most maxStreams streams per pass: the other namespaces wait for the next', async () => {
      const prefix = fresh();
      const store = world.store({ prefix, ttl: { defaultTtl: 1 } });
      for (const ns of ['a', 'b', 'c']) await store.put([ns], 'k', { ns });
      world.advance(2 * MINUTE);
      const first = await world.compactor({ maxStreams: 1 }).run();
      expect(first.examined).toBe(1);
      expect(first.entriesExpired).toBeLessThanOrEqual(1);
      let total = first.entriesExpired;
      for (let i = 0; i < 40 && total < 3; i++) total += await passes(1, { maxStreams: 1 });
      expect(total).toBe(3);
      for (const ns of ['a', 'b', 'c'])
        expect(await itemsOf(store, `${prefix}.${ns}.`)).toEqual([]);
    });
  });

  describe.skipIf(!factory.enabled)('tenants and namespaces', () => {
    it("removes one tenant's expired items, never another's with the same stream ids", async () => {
      const prefix = fresh();
      const a = world.store({ prefix });
      const b = world.store({ prefix, apiKey: await world.tenantKey(`other-${prefix}`) });
      for (const store of [a, b]) {
        await store.put(['one'], 'k', { n: 1 }, undefined, { ttl: store === a ? 1 : 5 });
        await store.put(['two'], 'k', { n: 2 }, undefined, { ttl: store === a ? 5 : 1 });
      }
      world.advance(2 * MINUTE);
      expect(await passes()).toBe(2);
      expect(await itemsOf(a, `${prefix}.one.`)).toEqual([]);
      expect(await itemsOf(a, `${prefix}.two.`)).toEqual(['k']);
      expect(await itemsOf(b, `${prefix}.one.`)).toEqual(['k']);
      expect(await itemsOf(b, `${prefix}.two.`)).toEqual([]);
      expect((await b.get(['one'], 'k'))?.value).toEqual({ n: 1 });
    });
  });

  describe.skipIf(!factory.enabled)('races and crashes', () => {
    it("loses to a client's refresh committed between its read and its commit, and removes the rest next pass", async () => {
      const prefix = fresh();
      const stream = `${prefix}.mem.`;
      const store = world.store({ prefix });
      await store.put(['mem'], 'kept', { n: 1 }, undefined, { ttl: 1 });
      await store.put(['mem'], 'gone', { n: 2 }, undefined, { ttl: 1 });
      world.advance(MINUTE + 1);
      // A client whose clock is 5 s behind the server's still reads `kept` live, and refreshes it.
      const behind = world.store({ prefix, clock: { now: () => world.now() - 5_000 } });
      const real = world.ledger.checkpoints;
      const racing = {
        checkpoint: async (req: Parameters<Checkpointer['checkpoint']>[0]) => {
          expect((await behind.get(['mem'], 'kept'))?.value).toEqual({ n: 1 });
          return real.checkpoint(req);
        },
      } as unknown as Checkpointer;

      expect(await passes(1, { checkpoints: racing })).toBe(0);
      expect(await itemsOf(store, stream)).toEqual(['gone', 'kept']);
      world.advance(1_000); // the next pass

      expect(await passes()).toBe(1);
      expect(await itemsOf(store, stream)).toEqual(['kept']);
      expect((await behind.get(['mem'], 'kept'))?.value).toEqual({ n: 1 });
    });

    it('dies between its read and its commit, or after its commit: the next pass finishes', async () => {
      const prefix = fresh();
      const stream = `${prefix}.mem.`;
      const store = world.store({ prefix });
      await store.put(['mem'], 'a', { n: 1 }, undefined, { ttl: 1 });
      await store.put(['mem'], 'b', { n: 2 }, undefined, { ttl: 3 });
      world.advance(2 * MINUTE);
      const dieAfter = (step: string) => (s: string) => {
        if (s === step) throw new CrashInjectedError(s);
      };
      await expect(world.compactor({ crash: dieAfter('expiry-read') }).run()).rejects.toThrow(
        CrashInjectedError,
      );
      expect(await itemsOf(store, stream)).toEqual(['a', 'b']);
      world.advance(2 * MINUTE);
      await expect(world.compactor({ crash: dieAfter('expiry-committed') }).run()).rejects.toThrow(
        CrashInjectedError,
      );
      expect(await itemsOf(store, stream)).toEqual([]);
      world.advance(20_000); // the dead pass's lease has lapsed
      expect(await passes(2)).toBe(0);
      await store.put(['mem'], 'c', { n: 3 });
      expect(await itemsOf(store, stream)).toEqual(['c']);
    });
  });

  describe.skipIf(!factory.enabled)('a hint that lies', () => {
    /** A namespace's stream written as a store writes it, with the hint given (or none). */
    const write = async (hint: number | undefined, x: number) => {
      const prefix = fresh();
      const store = world.store({ prefix });
      const stream = `${prefix}.mem.`;
      await store.client.checkpoint(stream, {
        ops: [
          { op: 'set', path: '/ns', value: ['mem'] },
          { op: 'set', path: '/c', value: 1 },
          { op: 'set', path: '/n', value: 1 },
          {
            op: 'set',
            path: '/items',
            value: { k: { v: { n: 0 }, c: 1, u: 1, o: 0, x, t: MINUTE } },
          },
        ],
        baseDigest: emptyStateDigest(2),
        ...(hint === undefined ? {} : { expiry: { at: hint, path: '/items', field: 'x' } }),
      });
      return { store, stream };
    };

    it('too early: deletes nothing live, then removes the item at its real expiry', async () => {
      const { store, stream } = await write(world.now() - 1, world.now() + MINUTE);
      expect(await passes()).toBe(0);
      expect(await itemsOf(store, stream)).toEqual(['k']);
      expect(await store.get(['mem'], 'k', { refreshTtl: false })).not.toBeNull();
      world.advance(MINUTE + 1);
      expect(await passes()).toBe(1);
      expect(await itemsOf(store, stream)).toEqual([]);
    });

    it('too late, or none: the item stays stored but is never served, and goes at the hint', async () => {
      const late = await write(world.now() + 60 * MINUTE, world.now() + MINUTE);
      const none = await write(undefined, world.now() + MINUTE);
      world.advance(2 * MINUTE);
      expect(await passes()).toBe(0);
      expect(await itemsOf(late.store, late.stream)).toEqual(['k']);
      expect(await late.store.get(['mem'], 'k')).toBeNull();
      expect(await none.store.get(['mem'], 'k')).toBeNull();
      world.advance(60 * MINUTE);
      expect(await passes()).toBe(1);
      expect(await itemsOf(late.store, late.stream)).toEqual([]);
      expect(await itemsOf(none.store, none.stream)).toEqual(['k']); // no hint: no visit
      // The store's next write there carries the hint again (and purges the item itself).
      await none.store.put(['mem'], 'k2', { n: 1 }, undefined, { ttl: 1 });
      world.advance(2 * MINUTE);
      expect(await passes()).toBe(1);
      expect(await itemsOf(none.store, none.stream)).toEqual([]);
    });
  });

  describe.skipIf(!factory.enabled)('a hint edited in storage', () => {
    it('fails the visit closed: nothing deleted, the namespace unreadable, not emptied', async () => {
      const prefix = fresh();
      const stream = `${prefix}.mem.`;
      const store = world.store({ prefix });
      await store.put(['mem'], 'k', { n: 1 }, undefined, { ttl: 60 });
      await store.put(['mem'], 'j', { n: 2 }, undefined, { ttl: 60 });
      // The head's delta (seq 2, its own segment): its hint's time made one that is due now.
      const key = segmentKey(DEFAULT_TENANT, stream, 2);
      const stored = await world.objects.get(key);
      const text = Buffer.from(stored?.body ?? []).toString('latin1');
      const at = /"expiry":\{"at":(\d+)/.exec(text)?.[1];
      expect(at).toBeDefined();
      const edited = text.replace(
        `"at":${at}`,
        `"at":${String(Number(at) - 1).padStart(String(at).length, '0')}`,
      );
      await world.objects.putIfMatch(key, Buffer.from(edited, 'latin1'), stored?.etag as string);
      world.advance(2 * 60 * MINUTE);

      const report = await world.compactor().run();

      expect(report.entriesExpired).toBe(0);
      expect(report.errors).toBeGreaterThan(0);
      await expect(world.store({ prefix }).client.getState(stream)).rejects.toMatchObject({
        code: 'ErrTamperedLedger',
      });
    });
  });

  describe.skipIf(!factory.enabled)('bad input', () => {
    it('refuses a hint that is not one (400), writing nothing', async () => {
      const store = world.store({ prefix: fresh() });
      for (const expiry of [
        { at: -1, path: '/items', field: 'x' },
        { at: 1.5, path: '/items', field: 'x' },
        { at: 1, path: 'items', field: 'x' },
        { at: 1, path: '/items', field: '' },
        { at: 1, path: '/items', field: 'x', more: 1 },
      ]) {
        await expect(
          store.client.checkpoint('bad.', {
            ops: [{ op: 'set', path: '/a', value: 1 }],
            baseDigest: emptyStateDigest(2),
            expiry,
          } as never),
        ).rejects.toMatchObject({ status: 400 });
      }
      await expect(store.client.getState('bad.')).rejects.toMatchObject({ status: 404 });
    });
  });

  describe.skipIf(!factory.enabled)('directory backfill', () => {
    it('names an older store’s namespace in the directory once a read meets it, so a removed list entry cannot hide it', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      // As a store before the directory: the namespace's stream only.
      await store.client.checkpoint(`${prefix}.old.`, {
        ops: [
          { op: 'set', path: '/ns', value: ['old'] },
          { op: 'set', path: '/c', value: 1 },
          { op: 'set', path: '/n', value: 1 },
          { op: 'set', path: '/items', value: { k: { v: { n: 0 }, c: 1, u: 1, o: 0 } } },
        ],
        baseDigest: emptyStateDigest(2),
      });
      await store.put(['new'], 'k', { n: 1 });
      const dir = `${prefix}._dir`;
      expect(await itemsOf(store, dir)).toEqual([`${prefix}.new.`]);

      expect(await world.store({ prefix }).listNamespaces()).toEqual([['new'], ['old']]);
      expect(await itemsOf(store, dir)).toEqual([`${prefix}.new.`, `${prefix}.old.`]);
      // Added once: another read writes nothing.
      const before = world.sent.length;
      await world.store({ prefix }).listNamespaces();
      expect(world.sent.slice(before).filter((r) => r.startsWith('POST'))).toEqual([]);

      await world.records.delete(streamIndexKey(DEFAULT_TENANT, `${prefix}.old.`));
      const reader = world.store({ prefix });
      expect(await reader.listNamespaces()).toEqual([['new'], ['old']]);
      expect((await reader.search([])).map((i) => i.value)).toEqual([{ n: 0 }, { n: 1 }]);
    });
  });
});
