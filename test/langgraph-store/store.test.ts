import { InMemoryStore, InvalidNamespaceError } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyStateDigest } from '../../packages/client/src/index.js';
import { StoreIndexMissingError } from '../../packages/langgraph/src/index.js';
import { streamIndexKey } from '../../shared/chain/storage-keys.js';
import { DEFAULT_TENANT } from '../../shared/keys/keys.js';
import { allStores } from '../support/stores.js';
import { type StoreWorld, startStoreWorld } from './world.js';

/**
 * HefestoStore's behaviour beyond InMemoryStore's (store-differential.test.ts compares the
 * rest): TTL with refresh on read on the world's clock, the index hook, two workers putting
 * one key, values by ref, long and deep namespaces, and the requests each call sends. On
 * memory, local and the AWS emulators.
 */

const MINUTE = 60_000;
let prefixes = 0;
const fresh = () => `t${prefixes++}`;

/** A deterministic embedding: letter counts of a–z. */
const letters = async (texts: string[]) =>
  texts.map((t) => {
    const v = new Array(26).fill(0);
    for (const ch of t.toLowerCase()) {
      const i = ch.charCodeAt(0) - 97;
      if (i >= 0 && i < 26) v[i] += 1;
    }
    return v;
  });
const embeddings = {
  embedDocuments: letters,
  embedQuery: async (t: string) => (await letters([t]))[0] as number[],
};

const strip = (items: Array<{ createdAt?: Date; updatedAt?: Date }>) =>
  items.map(({ createdAt: _c, updatedAt: _u, ...rest }) => rest);

describe.each(allStores)('HefestoStore ($name)', (factory) => {
  let world: StoreWorld;
  beforeAll(async () => {
    if (factory.enabled) world = await startStoreWorld(factory);
  });
  afterAll(async () => world?.close());

  describe.skipIf(!factory.enabled)('ttl', () => {
    it('hides an item once its ttl has passed, and a read moves its expiry', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['mem'], 'short', { n: 1 }, undefined, { ttl: 1 });
      await store.put(['mem'], 'forever', { n: 2 });

      world.advance(40_000);
      expect((await store.get(['mem'], 'short'))?.value).toEqual({ n: 1 }); // now + 1 min
      world.advance(40_000); // 80 s after the put, 40 s after the read
      expect((await store.search(['mem'])).map((i) => i.key)).toEqual(['short', 'forever']);
      world.advance(MINUTE + 1);

      expect(await store.get(['mem'], 'short')).toBeNull();
      expect((await store.search(['mem'])).map((i) => i.key)).toEqual(['forever']);
      // Another worker sees the same; the next write to the namespace deletes it for good.
      const other = world.store({ prefix });
      expect(await other.get(['mem'], 'short')).toBeNull();
      await other.put(['mem'], 'next', { n: 3 });
      const state = await other.client.getState(`${prefix}.mem.`);
      expect(Object.keys((state.state as { items: object }).items).sort()).toEqual([
        'forever',
        'next',
      ]);
    });

    it('keeps the expiry where it was without refreshOnRead, and sweep deletes what expired', async () => {
      const prefix = fresh();
      const store = world.store({ prefix, ttl: { defaultTtl: 1, refreshOnRead: false } });
      await store.put(['a'], 'k1', { n: 1 });
      await store.put(['a', 'b'], 'k2', { n: 2 }, undefined, { ttl: null });
      world.advance(40_000);
      expect(await store.get(['a'], 'k1')).not.toBeNull();
      expect(await store.get(['a', 'b'], 'k2', { refreshTtl: true })).not.toBeNull(); // no ttl
      world.advance(30_000);
      expect(await store.get(['a'], 'k1')).toBeNull();

      expect(await store.sweep()).toBe(1);
      expect(await store.sweep()).toBe(0);
      const state = await store.client.getState(`${prefix}.a.`);
      expect((state.state as { items: object }).items).toEqual({});
      expect((await store.get(['a', 'b'], 'k2'))?.value).toEqual({ n: 2 });
    });
  });

  describe.skipIf(!factory.enabled)('ttl, one read', () => {
    it('refreshes on a get that asks, on a store that does not by default', async () => {
      const store = world.store({ prefix: fresh(), ttl: { refreshOnRead: false } });
      await store.put(['a'], 'k', { n: 1 }, undefined, { ttl: 1 });
      world.advance(40_000);
      expect(await store.get(['a'], 'k', { refreshTtl: true })).not.toBeNull();
      world.advance(40_000);
      expect(await store.get(['a'], 'k')).not.toBeNull();
      world.advance(MINUTE);
      expect(await store.get(['a'], 'k')).toBeNull();
    });
  });

  describe.skipIf(!factory.enabled)('index', () => {
    it('ranks a query as InMemoryStore ranks it, with the same embeddings', async () => {
      const store = world.store({
        prefix: fresh(),
        index: { embeddings, fields: ['text'], dims: 26 },
      });
      // InMemoryStore types its embeddings as LangChain's class; it calls the same two methods.
      const theirs = new InMemoryStore({
        index: { embeddings: embeddings as never, fields: ['text'], dims: 26 },
      });
      const docs = [
        ['docs', 'py', { text: 'python tutorial' }],
        ['docs', 'ts', { text: 'typescript guide' }],
        ['docs', 'rs', { text: 'rust book' }],
        ['notes', 'py2', { text: 'python snakes', tag: 'x' }],
        ['notes', 'none', { other: 'no text field' }],
      ] as const;
      for (const s of [store, theirs]) {
        for (const [ns, key, value] of docs) await s.put([ns], key, { ...value });
        await s.put(['docs'], 'skip', { text: 'python' }, false);
      }
      for (const options of [
        { query: 'python programming' },
        { query: 'guide to typescript', limit: 2 },
        { query: 'python', offset: 1, limit: 3 },
        { query: 'python', filter: { tag: 'x' } },
      ]) {
        const ours = await store.search([], options);
        expect(strip(ours)).toEqual(strip(await theirs.search([], options)));
      }
    });

    it('refuses a query on a store without an index', async () => {
      const store = world.store({ prefix: fresh() });
      await store.put(['docs'], 'py', { text: 'python' });
      await expect(store.search(['docs'], { query: 'python' })).rejects.toBeInstanceOf(
        StoreIndexMissingError,
      );
      await expect(store.search(['docs'], { query: 'python' })).rejects.toMatchObject({
        code: 'ErrStoreIndexMissing',
      });
    });
  });

  describe.skipIf(!factory.enabled)('two workers', () => {
    it('keep one of two puts of the same key whole: the last one committed', async () => {
      const prefix = fresh();
      const a = world.store({ prefix });
      const b = world.store({ prefix });
      await a.put(['shared'], 'seed', { n: 0 });
      await b.get(['shared'], 'seed');
      const big = (who: string) =>
        Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}`, `${who}-${i}`]));
      for (let round = 0; round < 6; round++) {
        const before = world.sent.length;
        await Promise.all([
          a.put(['shared'], 'k', big(`a${round}`)),
          b.put(['shared'], 'k', big(`b${round}`)),
        ]);
        const value = (await world.store({ prefix }).get(['shared'], 'k'))?.value;
        expect([big(`a${round}`), big(`b${round}`)]).toContainEqual(value);
        // The loser's first checkpoint was refused, then sent again on the winner's state.
        const posts = world.sent.slice(before).filter((r) => r.startsWith('POST'));
        expect(posts.length).toBeGreaterThanOrEqual(3);
      }
      // Both keep working on the namespace after the races.
      await a.put(['shared'], 'after', { n: 1 });
      expect((await b.search(['shared'])).map((i) => i.key)).toEqual(['seed', 'k', 'after']);
    });
  });

  describe.skipIf(!factory.enabled)('failures', () => {
    it('applies a put whose reply was lost once: the retry answers the same receipt', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['a'], 'k1', { n: 1 });
      world.loseReplies(1);
      await store.put(['a'], 'k2', { n: 2 });
      await store.put(['a'], 'k3', { n: 3 });
      const head = await store.client.getStream(`${prefix}.a.`);
      expect(head.seq).toBe(3); // three checkpoints: the retried one stored once
      const other = world.store({ prefix });
      expect((await other.search(['a'])).map((i) => [i.key, i.value])).toEqual([
        ['k1', { n: 1 }],
        ['k2', { n: 2 }],
        ['k3', { n: 3 }],
      ]);
    });

    it('answers what it stored, whatever the caller does to the objects it passed or got', async () => {
      const store = world.store({ prefix: fresh() });
      const value = { list: [1], n: 1 };
      await store.put(['a'], 'k', value);
      value.list.push(2);
      const found = (await store.search(['a']))[0]?.value.list as number[];
      found.push(3);
      expect((await store.search(['a']))[0]?.value).toEqual({ list: [1], n: 1 });
    });

    it("refuses a prefix that would make one store's namespaces another's", () => {
      expect(() => world.store({ prefix: 'lgs.users' })).toThrow(/prefix must be/);
    });

    it('refuses an index whose embeddings answer the wrong vectors, writing nothing', async () => {
      const prefix = fresh();
      const bad = async (texts: string[]) => texts.map(() => [1, 2]);
      const store = world.store({ prefix, index: { embeddings: bad, dims: 26 } });
      await expect(store.put(['a'], 'k', { text: 'x' })).rejects.toThrow(/26 dimensions/);
      expect(await world.store({ prefix }).listNamespaces()).toEqual([]);
    });
  });

  describe.skipIf(!factory.enabled)('large values', () => {
    it('stores a value over the inline limit by ref and reads it back whole', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      const value = { kind: 'doc', body: 'x'.repeat(300 * 1024) };
      await store.put(['docs'], 'big', value);
      await store.put(['docs'], 'small', { kind: 'note' });
      const state = await store.client.getState(`${prefix}.docs.`);
      const stored = (state.state as { items: { big: { r?: unknown; v?: unknown } } }).items.big;
      expect(stored.r).toBeDefined();
      expect(stored.v).toBeUndefined();
      const other = world.store({ prefix });
      expect((await other.get(['docs'], 'big'))?.value).toEqual(value);
      expect(
        (await other.search(['docs'], { filter: { kind: 'doc' } })).map((i) => i.value),
      ).toEqual([value]);
    });
  });

  describe.skipIf(!factory.enabled)('namespaces', () => {
    it('names long labels by their stream state and refuses one too deep', async () => {
      const store = world.store({ prefix: fresh() });
      const long = ['l'.repeat(40), 'é'.repeat(20)];
      await store.put(long, 'k', { n: 1 });
      expect(await store.listNamespaces()).toEqual([long]);
      expect((await store.get(long, 'k'))?.namespace).toEqual(long);
      const deep = Array.from({ length: 16 }, (_, i) => `level-${i}`);
      await expect(store.put(deep, 'k', { n: 1 })).rejects.toBeInstanceOf(InvalidNamespaceError);
    });
  });

  describe.skipIf(!factory.enabled)('races inside one store', () => {
    it('a search whose reply comes after a delete of the same store answers, and both hold', async () => {
      const store = world.store({ prefix: fresh() });
      await store.put(['r'], 'a', { n: 1 });
      await store.put(['r'], 'b', { n: 2 });
      await store.search(['r']); // held: the state with a and b
      // The search's conditional read is sent on the held state, held before the server
      // answers; the delete commits and its reply lands first; then the server answers the
      // search with the delta since (the delete), applied to the state the search sent.
      const hold = world.holdNext((r) => r.includes('/tuple') && r.includes('sinceDigest'));
      const search = store.search(['r']);
      await hold.reached;
      await store.delete(['r'], 'a');
      hold.release();
      expect((await search).map((i) => i.key)).toEqual(['b']);
      expect((await store.search(['r'])).map((i) => i.key)).toEqual(['b']);
      await store.put(['r'], 'a', { n: 3 });
      expect((await store.search(['r'])).map((i) => [i.key, i.value])).toEqual([
        ['b', { n: 2 }],
        ['a', { n: 3 }],
      ]);
    });

    it('a search whose reply comes after a put of the same store answers the put once', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['r'], 'a', { n: 1 });
      await store.search(['r']);
      const hold = world.holdNext((r) => r.includes('/tuple') && r.includes('sinceDigest'));
      const search = store.search(['r']);
      await hold.reached;
      await store.put(['r'], 'b', { n: 2 });
      hold.release();
      expect((await search).map((i) => i.key)).toEqual(['a', 'b']);
      await store.delete(['r'], 'b');
      expect((await store.search(['r'])).map((i) => i.key)).toEqual(['a']);
      expect((await world.store({ prefix }).search(['r'])).map((i) => i.key)).toEqual(['a']);
    });
  });

  describe.skipIf(!factory.enabled)('sweep', () => {
    it('counts the items it deleted once, when its write lost a race and was made again', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['s'], 'x', { n: 1 }, undefined, { ttl: 1 });
      await store.put(['s'], 'y', { n: 2 });
      const other = world.store({ prefix });
      await other.put(['s'], 'z', { n: 3 }); // moves the stream: store's held state is stale
      world.advance(2 * MINUTE);
      expect(await store.sweep(['s'])).toBe(1);
      expect((await other.search(['s'])).map((i) => i.key)).toEqual(['y', 'z']);
    });
  });

  describe.skipIf(!factory.enabled)('batch', () => {
    it("keeps two puts whose namespace and key join to one string with ':'", async () => {
      const store = world.store({ prefix: fresh() });
      await store.batch([
        { namespace: ['a', 'b'], key: 'c', value: { n: 1 } },
        { namespace: ['a'], key: 'b:c', value: { n: 2 } },
      ]);
      expect((await store.get(['a', 'b'], 'c'))?.value).toEqual({ n: 1 });
      expect((await store.get(['a'], 'b:c'))?.value).toEqual({ n: 2 });
    });

    it("refuses ':' in a namespace label as InMemoryStore does", async () => {
      const store = world.store({ prefix: fresh() });
      const theirs = new InMemoryStore();
      for (const ns of [['a:b'], ['a', 'b:c']]) {
        const expected = await theirs.put(ns, 'k', { n: 1 }).catch((e: Error) => e);
        const actual = await store.put(ns, 'k', { n: 1 }).catch((e: Error) => e);
        expect(actual).toBeInstanceOf(InvalidNamespaceError);
        expect((actual as Error).message).toBe((expected as Error).message);
      }
    });
  });

  describe.skipIf(!factory.enabled)('directory', () => {
    it('lists and searches a namespace whose stream-list entry was removed: the directory names it', async () => {
      const prefix = fresh();
      const writer = world.store({ prefix });
      await writer.put(['users', 'ana'], 'k', { n: 1 });
      await writer.put(['users', 'bo'], 'k', { n: 2 });
      // The side record the stream list is served from, removed by whoever holds the storage.
      await world.records.delete(streamIndexKey(DEFAULT_TENANT, `${prefix}.users.ana.`));
      const unlisted = await world.store({ prefix }).client.listStreams({ prefix: `${prefix}.` });
      expect(unlisted.streams.map((s) => s.streamId)).not.toContain(`${prefix}.users.ana.`);
      const reader = world.store({ prefix });
      expect(await reader.listNamespaces()).toEqual([
        ['users', 'ana'],
        ['users', 'bo'],
      ]);
      expect((await reader.search(['users'])).map((i) => i.value)).toEqual([{ n: 1 }, { n: 2 }]);
    });

    it('leaves out a name the directory holds for a namespace whose put stopped before its stream', async () => {
      const prefix = fresh();
      const store = world.store({ prefix });
      await store.put(['a'], 'k', { n: 1 });
      // The next put's directory write commits, then its namespace's write never arrives.
      const failing = world.store({ prefix });
      const hold = world.holdNext((r) => r.startsWith(`POST /v1/streams/${prefix}.b.`));
      const put = failing.put(['b'], 'k', { n: 2 });
      await hold.reached;
      const reader = world.store({ prefix });
      expect(await reader.listNamespaces()).toEqual([['a']]);
      expect((await reader.search([])).map((i) => i.key)).toEqual(['k']);
      hold.release();
      await put;
      expect(await reader.listNamespaces()).toEqual([['a'], ['b']]);
    });

    it('still finds a namespace an older store made without the directory (from the stream list)', async () => {
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
      const reader = world.store({ prefix });
      expect(await reader.listNamespaces()).toEqual([['new'], ['old']]);
      expect((await reader.search([])).map((i) => i.value)).toEqual([{ n: 0 }, { n: 1 }]);
    });
  });

  describe.skipIf(!factory.enabled)('requests', () => {
    it('sends one request per get, one per warm put, and 2 + one per namespace per search', async () => {
      const store = world.store({ prefix: fresh() });
      const count = async (f: () => Promise<unknown>) => {
        const before = world.sent.length;
        await f();
        return world.sent.slice(before);
      };
      // A new namespace: its read, the directory's read, the directory's write, its write.
      expect(await count(() => store.put(['a'], 'k1', { n: 1 }))).toHaveLength(4);
      expect(await count(() => store.put(['a'], 'k2', { n: 2 }))).toHaveLength(1);
      expect(await count(() => store.put(['a', 'b'], 'k3', { n: 3 }))).toHaveLength(3); // directory held
      expect(await count(() => store.get(['a'], 'k1'))).toHaveLength(1);
      expect(await count(() => store.delete(['a'], 'k1'))).toHaveLength(1);
      expect(await count(() => store.search(['a']))).toHaveLength(4); // list, directory, 2 namespaces
      expect(await count(() => store.listNamespaces())).toHaveLength(2); // list, directory
      // A search whose namespaces (and directory) did not change is answered `unchanged`.
      const again = await count(() => store.search(['a']));
      expect(again.filter((r) => r.includes('sinceDigest'))).toHaveLength(3);
    });
  });
});
