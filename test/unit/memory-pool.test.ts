import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../shared/domain/errors.js';
import {
  type MemoryAccount,
  MemoryPool,
  type Reclaimable,
} from '../../shared/state/memory-pool.js';

/**
 * Issue 21 item 3: one memory ceiling for the process (memory-pool.ts). Requests charge what
 * they are about to build; the caches give memory back first; past that a request waits,
 * then is refused with 503 and Retry-After; accounts that all wait on each other are broken
 * up at once rather than at their deadline.
 */

/** A cache of fixed-size entries that gives them back oldest first. */
const cacheOf = (entries: number[]): Reclaimable & { entries: number[] } => {
  const cache = {
    entries,
    get held() {
      return cache.entries.reduce((a, b) => a + b, 0);
    },
    reclaim(bytes: number) {
      let freed = 0;
      while (freed < bytes && cache.entries.length > 0) freed += cache.entries.shift() as number;
    },
  };
  return cache;
};

const settled = async <T>(p: Promise<T>) => {
  let state: 'pending' | 'fulfilled' | 'rejected' = 'pending';
  p.then(
    () => {
      state = 'fulfilled';
    },
    () => {
      state = 'rejected';
    },
  );
  await new Promise((r) => setImmediate(r));
  return state;
};

describe('MemoryPool', () => {
  describe('charge', () => {
    it('lends what fits at once and counts it until the account ends', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const a = pool.open();
      await a.charge(60);
      await a.charge(40);
      expect(pool.stats).toMatchObject({ requests: 100, peak: 100, waited: 0 });
      a.end();
      expect(pool.stats.requests).toBe(0);
    });

    it('takes memory back from the caches, oldest entries first, before anyone waits', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const cache = cacheOf([10, 20, 30]);
      pool.register(cache);
      const a = pool.open();
      await a.charge(70);
      // 60 held by the cache, 70 asked: the two oldest entries (10 + 20) go.
      expect(cache.entries).toEqual([30]);
      expect(pool.stats).toMatchObject({ requests: 70, caches: 30, waited: 0 });
      expect(pool.stats.peak).toBeLessThanOrEqual(100);
    });

    it('makes a request wait until another gives memory back, first come first served', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const a = pool.open();
      const b = pool.open();
      const c = pool.open();
      await a.charge(80);
      const bWaits = b.charge(50);
      const cWaits = c.charge(10);
      // c would fit, but b came first.
      expect(await settled(bWaits)).toBe('pending');
      expect(await settled(cWaits)).toBe('pending');
      a.end();
      await Promise.all([bWaits, cWaits]);
      expect(pool.stats).toMatchObject({ requests: 60, waited: 2, refused: 0 });
      expect(pool.stats.peak).toBe(80);
    });

    it('refuses a request that waited past maxWaitMs with 503 and Retry-After', async () => {
      const pool = new MemoryPool({ capacity: 100, maxWaitMs: 0, retryAfterMs: 2000 });
      const a = pool.open();
      await a.charge(90);
      const b = pool.open();
      const refused = await b.charge(20).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(UnavailableError);
      expect(refused).toMatchObject({ code: 'ErrUnavailable', retryAfterMs: 2000 });
      b.end();
      // The pool goes on: what a held is still a's, and memory comes free as before.
      a.end();
      const c = pool.open();
      await c.charge(100);
      expect(pool.stats).toMatchObject({ requests: 100, refused: 1 });
    });

    it('refuses at once more than the whole pool', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      await expect(pool.open().charge(101)).rejects.toMatchObject({ code: 'ErrUnavailable' });
    });

    it('serves a waiter that already holds memory before those that hold none', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const a = pool.open();
      const b = pool.open();
      const c = pool.open();
      await a.charge(50);
      await b.charge(40);
      const order: string[] = [];
      const cWaits = c.charge(30).then(() => order.push('c'));
      const bWaits = b.charge(30).then(() => order.push('b'));
      a.end();
      await Promise.all([bWaits, cWaits.catch(() => {})]);
      expect(order[0]).toBe('b');
    });

    it('breaks up accounts that all hold memory and all wait for more, newest first', async () => {
      const pool = new MemoryPool({ capacity: 100, maxWaitMs: 60_000 });
      const a = pool.open();
      const b = pool.open();
      await a.charge(50);
      await b.charge(50);
      const aWaits = a.charge(30);
      expect(await settled(aWaits)).toBe('pending');
      // b now waits too: nobody can give anything back by finishing, so b (the newest) is
      // refused at once, not after a minute; its request ends and a goes on.
      await expect(b.charge(30)).rejects.toMatchObject({ code: 'ErrUnavailable' });
      b.end();
      await aWaits;
      expect(pool.stats).toMatchObject({ requests: 80, refused: 1 });
    });
  });

  describe('retain', () => {
    it('keeps an ended account charged until the stream that holds it is done', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const a: MemoryAccount = pool.open();
      await a.charge(70);
      const done = a.retain();
      a.end();
      expect(pool.stats.requests).toBe(70);
      done();
      done();
      expect(pool.stats.requests).toBe(0);
    });
  });

  describe('caches', () => {
    it('let a cache hold only what the pool has room for, never while a request waits', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const cache = cacheOf([]);
      pool.register(cache);
      const a = pool.open();
      await a.charge(60);
      expect(pool.tryHold(cache, 50)).toBe(false);
      expect(pool.tryHold(cache, 40)).toBe(true);
      cache.entries.push(40);
      const b = pool.open();
      const bWaits = b.charge(70);
      expect(await settled(bWaits)).toBe('pending');
      // The cache gave its 40 back to b's charge, which still waits for a's 60.
      expect(cache.entries).toEqual([]);
      expect(pool.tryHold(cache, 1)).toBe(false);
      a.end();
      await bWaits;
    });

    it('move memory with a state between a request and a cache (adopt, handOver)', async () => {
      const pool = new MemoryPool({ capacity: 100 });
      const a = pool.open();
      await a.charge(30);
      a.handOver(50);
      expect(pool.stats.requests).toBe(0);
      a.adopt(20);
      expect(pool.stats.requests).toBe(20);
      a.end();
      expect(pool.stats.requests).toBe(0);
    });
  });
});
