import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RetryOptions } from '../../shared/adapters/retry.js';
import { ConflictError, UnavailableError } from '../../shared/domain/errors.js';
import { type FaultInjector, scriptedFaults } from '../../shared/ports/faults.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';

/**
 * The ObjectStore contract: every adapter (memory, local, aws) runs this suite unchanged.
 */

export interface ObjectStoreHarness {
  store: ObjectStore;
  cleanup(): Promise<void>;
}

export type MakeObjectStore = (options: {
  faults?: FaultInjector;
  retry?: RetryOptions;
}) => Promise<ObjectStoreHarness>;

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);
const fastRetry: RetryOptions = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 };

export const objectStoreContract = (name: string, make: MakeObjectStore): void => {
  describe(`ObjectStore contract: ${name}`, () => {
    let harness: ObjectStoreHarness;
    let store: ObjectStore;
    const open = async (options: Parameters<MakeObjectStore>[0] = {}) => {
      await harness?.cleanup();
      harness = await make(options);
      store = harness.store;
      return store;
    };

    beforeEach(async () => {
      harness = await make({});
      store = harness.store;
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    describe('putIfAbsent', () => {
      it('creates an object that get and head return', async () => {
        const put = await store.putIfAbsent('a/b/c.seg', bytes('hello'));
        expect(put.created).toBe(true);
        const got = await store.get('a/b/c.seg');
        expect(text(got?.body)).toBe('hello');
        expect(got?.etag).toBe(put.etag);
        expect(await store.head('a/b/c.seg')).toEqual({
          key: 'a/b/c.seg',
          etag: put.etag,
          size: 5,
        });
      });

      it('refuses other bytes at an existing key with a ConflictError carrying the current', async () => {
        const first = await store.putIfAbsent('k', bytes('one'));
        const err = await store.putIfAbsent('k', bytes('two')).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConflictError);
        expect((err as ConflictError).current).toMatchObject({ key: 'k', etag: first.etag });
        expect(text((await store.get('k'))?.body)).toBe('one');
      });

      it('accepts the same bytes again as an earlier attempt of the same write', async () => {
        const first = await store.putIfAbsent('k', bytes('same'));
        const again = await store.putIfAbsent('k', bytes('same'));
        expect(again).toEqual({ etag: first.etag, created: false });
      });

      it('lets exactly one of 20 racing create-only writers win', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => store.putIfAbsent('race', bytes(`writer-${i}`))),
        );
        const winners = results.filter((r) => r.status === 'fulfilled');
        const losers = results.filter((r) => r.status === 'rejected');
        expect(winners).toHaveLength(1);
        expect(losers).toHaveLength(19);
        for (const l of losers) expect(l.reason).toBeInstanceOf(ConflictError);
        const stored = text((await store.get('race'))?.body);
        const winnerIndex = results.findIndex((r) => r.status === 'fulfilled');
        expect(stored).toBe(`writer-${winnerIndex}`);
      });

      it('stores empty and binary bodies byte for byte', async () => {
        const binary = new Uint8Array(256).map((_, i) => i);
        await store.putIfAbsent('bin', binary);
        await store.putIfAbsent('empty', new Uint8Array(0));
        expect(Buffer.from((await store.get('bin'))?.body ?? [])).toEqual(Buffer.from(binary));
        expect((await store.get('empty'))?.body.length).toBe(0);
      });
    });

    describe('putIfMatch', () => {
      it('replaces the object when the etag is current', async () => {
        const first = await store.putIfAbsent('m', bytes('v1'));
        const second = await store.putIfMatch('m', bytes('v2'), first.etag);
        expect(second.created).toBe(true);
        expect(second.etag).not.toBe(first.etag);
        expect(text((await store.get('m'))?.body)).toBe('v2');
      });

      it('refuses a stale etag and leaves the object as it is', async () => {
        const first = await store.putIfAbsent('m', bytes('v1'));
        const second = await store.putIfMatch('m', bytes('v2'), first.etag);
        const err = await store.putIfMatch('m', bytes('v3'), first.etag).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConflictError);
        expect((err as ConflictError).current).toMatchObject({ etag: second.etag });
        expect(text((await store.get('m'))?.body)).toBe('v2');
      });

      it('refuses a missing key', async () => {
        const err = await store.putIfMatch('nothing', bytes('v'), 'abc').catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConflictError);
        expect((err as ConflictError).current).toBeUndefined();
        expect(await store.get('nothing')).toBeUndefined();
      });

      it('lets exactly one racing writer win per round', async () => {
        let { etag } = await store.putIfAbsent('cas', bytes('round-0'));
        for (let round = 1; round <= 3; round++) {
          const results = await Promise.allSettled(
            Array.from({ length: 8 }, (_, i) =>
              store.putIfMatch('cas', bytes(`r${round}-w${i}`), etag),
            ),
          );
          const winners = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          expect(winners).toHaveLength(1);
          for (const r of results) {
            if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ConflictError);
          }
          etag = winners[0]?.etag ?? '';
        }
      });
    });

    describe('get, head and delete', () => {
      it('returns undefined for a missing key', async () => {
        expect(await store.get('missing')).toBeUndefined();
        expect(await store.head('missing')).toBeUndefined();
      });

      it('deletes an object, and deleting a missing key is not an error', async () => {
        await store.putIfAbsent('d', bytes('x'));
        await store.delete('d');
        await store.delete('d');
        expect(await store.get('d')).toBeUndefined();
        const again = await store.putIfAbsent('d', bytes('y'));
        expect(again.created).toBe(true);
      });
    });

    describe('list', () => {
      it('pages through a prefix in key order without gaps or repeats', async () => {
        const keys = Array.from({ length: 23 }, (_, i) => `s/${String(i).padStart(4, '0')}`);
        await Promise.all([...keys].reverse().map((k) => store.putIfAbsent(k, bytes(k))));
        await store.putIfAbsent('t/outside', bytes('no'));
        await store.putIfAbsent('s0', bytes('no'));
        const seen: string[] = [];
        let after: string | undefined;
        let pages = 0;
        do {
          const page = await store.list('s/', { after, limit: 5 });
          expect(page.items.length).toBeLessThanOrEqual(5);
          seen.push(...page.items.map((i) => i.key));
          after = page.next;
          pages++;
        } while (after !== undefined && pages < 20);
        expect(seen).toEqual(keys);
        expect(pages).toBeGreaterThanOrEqual(5);
      });

      it('starts strictly after the given key and reports sizes', async () => {
        await store.putIfAbsent('p/a', bytes('1'));
        await store.putIfAbsent('p/b', bytes('22'));
        await store.putIfAbsent('p/c', bytes('333'));
        const page = await store.list('p/', { after: 'p/a' });
        expect(page.items.map((i) => [i.key, i.size])).toEqual([
          ['p/b', 2],
          ['p/c', 3],
        ]);
        expect(page.next).toBeUndefined();
      });

      it('returns an empty page for an unused prefix', async () => {
        expect(await store.list('nothing/')).toEqual({ items: [] });
      });
    });

    describe('faults', () => {
      it('sees its own write when the reply of a create was lost', async () => {
        const faults = scriptedFaults([{ op: 'putIfAbsent', fault: 'reply-lost' }]);
        const s = await open({ faults, retry: fastRetry });
        const put = await s.putIfAbsent('lost', bytes('mine'));
        expect(put.created).toBe(false);
        expect(faults.remaining()).toBe(0);
        expect(text((await s.get('lost'))?.body)).toBe('mine');
      });

      it('sees its own write when the reply of a replace was lost', async () => {
        const faults = scriptedFaults([{ op: 'putIfMatch', fault: 'reply-lost' }]);
        const s = await open({ faults, retry: fastRetry });
        const first = await s.putIfAbsent('lost', bytes('v1'));
        await s.putIfMatch('lost', bytes('v2'), first.etag);
        expect(faults.remaining()).toBe(0);
        expect(text((await s.get('lost'))?.body)).toBe('v2');
      });

      it('still reports a real conflict after a retried attempt', async () => {
        const faults = scriptedFaults([{ op: 'putIfAbsent', fault: 'throttle' }]);
        const s = await open({ faults, retry: fastRetry });
        await s.putIfAbsent('taken', bytes('theirs')).catch(() => undefined);
        const err = await s.putIfAbsent('taken', bytes('mine')).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConflictError);
        expect(text((await s.get('taken'))?.body)).toBe('theirs');
      });

      it.each(['throttle', 'unavailable', 'conflict-409'] as const)(
        'retries an injected %s and succeeds',
        async (fault) => {
          const faults = scriptedFaults([
            { op: 'putIfAbsent', fault, times: 2 },
            { op: 'get', fault, times: 2 },
            { op: 'list', fault },
          ]);
          const s = await open({ faults, retry: fastRetry });
          expect((await s.putIfAbsent('f', bytes('ok'))).created).toBe(true);
          expect(text((await s.get('f'))?.body)).toBe('ok');
          expect((await s.list('')).items.map((i) => i.key)).toEqual(['f']);
          expect(faults.remaining()).toBe(0);
        },
      );

      it('gives up with UnavailableError when the store keeps failing, writing nothing', async () => {
        const faults = scriptedFaults([{ op: 'putIfAbsent', fault: 'unavailable', times: 10 }]);
        const s = await open({ faults, retry: fastRetry });
        const err = await s.putIfAbsent('never', bytes('x')).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UnavailableError);
        expect(await s.get('never')).toBeUndefined();
      });
    });
  });
};
