import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RetryOptions } from '../../shared/adapters/retry.js';
import { ConflictError, InvalidInputError, UnavailableError } from '../../shared/domain/errors.js';
import { type FaultInjector, scriptedFaults } from '../../shared/ports/faults.js';
import type { Item, RecordStore } from '../../shared/ports/record-store.js';

/**
 * The RecordStore contract: every adapter (memory, local, aws) runs this suite unchanged.
 */

export interface RecordStoreHarness {
  store: RecordStore;
  cleanup(): Promise<void>;
}

export type MakeRecordStore = (options: {
  faults?: FaultInjector;
  retry?: RetryOptions;
}) => Promise<RecordStoreHarness>;

const fastRetry: RetryOptions = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 };
const conflictOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  ) as Promise<ConflictError<Item> | undefined>;

export const recordStoreContract = (name: string, make: MakeRecordStore): void => {
  describe(`RecordStore contract: ${name}`, () => {
    let harness: RecordStoreHarness;
    let store: RecordStore;
    const open = async (options: Parameters<MakeRecordStore>[0] = {}) => {
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

    describe('put and get', () => {
      it('stores nested JSON values and reads them back', async () => {
        const item: Item = {
          pk: 'p',
          sk: 's',
          n: 42,
          f: 1.5,
          s: 'x',
          b: false,
          z: null,
          list: [1, 'two', { three: 3 }],
          obj: { a: { b: [] }, e: '' },
        };
        await store.put(item);
        expect(await store.get({ pk: 'p', sk: 's' })).toEqual(item);
        expect(await store.get({ pk: 'p', sk: 'other' })).toBeUndefined();
      });

      it('refuses a put whose notExists condition fails, carrying the stored item', async () => {
        await store.put({ pk: 'p', sk: 's', v: 1 }, { conditions: [{ op: 'notExists' }] });
        const err = await conflictOf(
          store.put({ pk: 'p', sk: 's', v: 2 }, { conditions: [{ op: 'notExists' }] }),
        );
        expect(err).toBeInstanceOf(ConflictError);
        expect(err?.current).toEqual({ pk: 'p', sk: 's', v: 1 });
        expect(await store.get({ pk: 'p', sk: 's' })).toEqual({ pk: 'p', sk: 's', v: 1 });
      });

      it('evaluates comparisons on attributes', async () => {
        await store.put({ pk: 'p', sk: 's', seq: 5, owner: 'a' });
        const cases: Array<[Parameters<RecordStore['put']>[1], boolean]> = [
          [{ conditions: [{ op: 'eq', attr: 'seq', value: 5 }] }, true],
          [{ conditions: [{ op: 'eq', attr: 'seq', value: 4 }] }, false],
          [{ conditions: [{ op: 'ne', attr: 'owner', value: 'b' }] }, true],
          [{ conditions: [{ op: 'lt', attr: 'seq', value: 6 }] }, true],
          [{ conditions: [{ op: 'lte', attr: 'seq', value: 4 }] }, false],
          [{ conditions: [{ op: 'gte', attr: 'seq', value: 5 }] }, true],
          [{ conditions: [{ op: 'gt', attr: 'seq', value: 5 }] }, false],
          [{ conditions: [{ op: 'attrNotExists', attr: 'lease' }] }, true],
          [{ conditions: [{ op: 'attrNotExists', attr: 'owner' }] }, false],
          [{ conditions: [{ op: 'exists' }, { op: 'eq', attr: 'owner', value: 'a' }] }, true],
          [{ conditions: [{ op: 'exists' }, { op: 'eq', attr: 'owner', value: 'z' }] }, false],
          [{ conditions: [{ op: 'eq', attr: 'missing', value: 1 }] }, false],
        ];
        for (const [options, holds] of cases) {
          const err = await conflictOf(
            store.put({ pk: 'p', sk: 's', seq: 5, owner: 'a' }, options),
          );
          expect({ options, conflict: err instanceof ConflictError }).toEqual({
            options,
            conflict: !holds,
          });
        }
      });

      it('refuses a condition on a missing item except notExists and attrNotExists', async () => {
        const err = await conflictOf(
          store.put({ pk: 'p', sk: 'new', v: 1 }, { conditions: [{ op: 'exists' }] }),
        );
        expect(err).toBeInstanceOf(ConflictError);
        expect(err?.current).toBeUndefined();
        await store.put(
          { pk: 'p', sk: 'new', v: 1 },
          { conditions: [{ op: 'attrNotExists', attr: 'v' }] },
        );
        expect(await store.get({ pk: 'p', sk: 'new' })).toEqual({ pk: 'p', sk: 'new', v: 1 });
      });

      it('holds an any condition when one of its conditions holds, on a missing item too', async () => {
        const held = { op: 'eq' as const, attr: 'held', value: true };
        const expired = { op: 'lte' as const, attr: 'until', value: 100 };
        const free = { op: 'any' as const, conditions: [{ op: 'notExists' as const }, expired] };
        const cases: Array<[Item | undefined, Parameters<RecordStore['put']>[1], boolean]> = [
          [undefined, { conditions: [free] }, true],
          [{ pk: 'p', sk: 'a', until: 50 }, { conditions: [free] }, true],
          [{ pk: 'p', sk: 'a', until: 150 }, { conditions: [free] }, false],
          [
            { pk: 'p', sk: 'a', until: 150, held: false },
            { conditions: [{ ...free, conditions: [expired, { ...held, value: false }] }] },
            true,
          ],
          [{ pk: 'p', sk: 'a', until: 150 }, { conditions: [free, { op: 'exists' }] }, false],
          [{ pk: 'p', sk: 'a', until: 50 }, { conditions: [{ op: 'any', conditions: [] }] }, false],
          [
            { pk: 'p', sk: 'a', held: true },
            { conditions: [{ op: 'any', conditions: [held] }] },
            true,
          ],
        ];
        for (const [stored, options, holds] of cases) {
          await store.delete({ pk: 'p', sk: 'a' });
          if (stored) await store.put(stored);
          const err = await conflictOf(store.put({ pk: 'p', sk: 'a', v: 1 }, options));
          expect({ stored, options, conflict: err instanceof ConflictError }).toEqual({
            stored,
            options,
            conflict: !holds,
          });
        }
        await expect(
          store.put(
            { pk: 'p', sk: 'b' },
            { conditions: [{ op: 'any', conditions: [{ op: 'eq', attr: 'bad name', value: 1 }] }] },
          ),
        ).rejects.toBeInstanceOf(InvalidInputError);
      });

      it('refuses invalid attribute names before writing', async () => {
        await expect(store.put({ pk: 'p', sk: 's', 'bad name': 1 })).rejects.toBeInstanceOf(
          InvalidInputError,
        );
        expect(await store.get({ pk: 'p', sk: 's' })).toBeUndefined();
      });
    });

    describe('update', () => {
      it('sets and removes attributes and returns the new item', async () => {
        await store.put({ pk: 'p', sk: 's', a: 1, b: 2 });
        const next = await store.update(
          { pk: 'p', sk: 's' },
          { set: { a: 10, c: { d: 1 } }, remove: ['b'] },
        );
        expect(next).toEqual({ pk: 'p', sk: 's', a: 10, c: { d: 1 } });
        expect(await store.get({ pk: 'p', sk: 's' })).toEqual(next);
      });

      it('creates the item when absent and no condition forbids it', async () => {
        const created = await store.update({ pk: 'p', sk: 'u' }, { set: { seq: 1 } });
        expect(created).toEqual({ pk: 'p', sk: 'u', seq: 1 });
      });

      it('lets exactly one racing conditional update win per round', async () => {
        await store.put({ pk: 'head', sk: 'h', seq: 0 });
        for (let round = 0; round < 4; round++) {
          const results = await Promise.allSettled(
            Array.from({ length: 10 }, (_, w) =>
              store.update(
                { pk: 'head', sk: 'h' },
                { set: { seq: round + 1, writer: `r${round}-w${w}` } },
                { conditions: [{ op: 'eq', attr: 'seq', value: round }] },
              ),
            ),
          );
          const winners = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          expect(winners).toHaveLength(1);
          for (const r of results) {
            if (r.status === 'rejected') {
              expect(r.reason).toBeInstanceOf(ConflictError);
              expect((r.reason as ConflictError<Item>).current?.seq).toBe(round + 1);
            }
          }
          expect(await store.get({ pk: 'head', sk: 'h' })).toEqual(winners[0]);
        }
      });
    });

    describe('delete', () => {
      it('deletes conditionally and carries the current item on conflict', async () => {
        await store.put({ pk: 'p', sk: 's', v: 1 });
        const err = await conflictOf(
          store.delete({ pk: 'p', sk: 's' }, { conditions: [{ op: 'eq', attr: 'v', value: 2 }] }),
        );
        expect(err?.current).toEqual({ pk: 'p', sk: 's', v: 1 });
        await store.delete(
          { pk: 'p', sk: 's' },
          { conditions: [{ op: 'eq', attr: 'v', value: 1 }] },
        );
        expect(await store.get({ pk: 'p', sk: 's' })).toBeUndefined();
        await store.delete({ pk: 'p', sk: 's' });
      });
    });

    describe('transact', () => {
      it('applies every operation together', async () => {
        await store.put({ pk: 't', sk: 'head', seq: 1 });
        await store.put({ pk: 't', sk: 'old', v: 1 });
        await store.put({ pk: 't', sk: 'checked', v: 7 });
        await store.transact([
          {
            kind: 'update',
            key: { pk: 't', sk: 'head' },
            update: { set: { seq: 2 } },
            conditions: [{ op: 'eq', attr: 'seq', value: 1 }],
          },
          {
            kind: 'put',
            item: { pk: 't', sk: 'idem', status: 'done' },
            conditions: [{ op: 'notExists' }],
          },
          { kind: 'delete', key: { pk: 't', sk: 'old' } },
          {
            kind: 'check',
            key: { pk: 't', sk: 'checked' },
            conditions: [{ op: 'eq', attr: 'v', value: 7 }],
          },
        ]);
        expect((await store.get({ pk: 't', sk: 'head' }))?.seq).toBe(2);
        expect(await store.get({ pk: 't', sk: 'idem' })).toEqual({
          pk: 't',
          sk: 'idem',
          status: 'done',
        });
        expect(await store.get({ pk: 't', sk: 'old' })).toBeUndefined();
      });

      it('writes nothing when one condition fails, naming that operation', async () => {
        await store.put({ pk: 't', sk: 'head', seq: 1 });
        await store.put({ pk: 't', sk: 'idem', status: 'taken' });
        const err = await conflictOf(
          store.transact([
            {
              kind: 'update',
              key: { pk: 't', sk: 'head' },
              update: { set: { seq: 2 } },
              conditions: [{ op: 'eq', attr: 'seq', value: 1 }],
            },
            { kind: 'put', item: { pk: 't', sk: 'extra', v: 1 } },
            {
              kind: 'put',
              item: { pk: 't', sk: 'idem', status: 'mine' },
              conditions: [{ op: 'notExists' }],
            },
          ]),
        );
        expect(err).toBeInstanceOf(ConflictError);
        expect(err?.index).toBe(2);
        expect(err?.current).toEqual({ pk: 't', sk: 'idem', status: 'taken' });
        expect((await store.get({ pk: 't', sk: 'head' }))?.seq).toBe(1);
        expect(await store.get({ pk: 't', sk: 'extra' })).toBeUndefined();
      });

      it('fails a transaction on a failed check without writing', async () => {
        await store.put({ pk: 't', sk: 'lease', epoch: 3 });
        const err = await conflictOf(
          store.transact([
            {
              kind: 'check',
              key: { pk: 't', sk: 'lease' },
              conditions: [{ op: 'eq', attr: 'epoch', value: 2 }],
            },
            { kind: 'put', item: { pk: 't', sk: 'x', v: 1 } },
          ]),
        );
        expect(err?.index).toBe(0);
        expect(err?.current).toEqual({ pk: 't', sk: 'lease', epoch: 3 });
        expect(await store.get({ pk: 't', sk: 'x' })).toBeUndefined();
      });

      it('refuses two operations on one key and an empty transaction', async () => {
        await expect(
          store.transact([
            { kind: 'put', item: { pk: 't', sk: 'a' } },
            { kind: 'delete', key: { pk: 't', sk: 'a' } },
          ]),
        ).rejects.toBeInstanceOf(InvalidInputError);
        await expect(store.transact([])).rejects.toBeInstanceOf(InvalidInputError);
      });

      it('lets exactly one of racing transactions on the same head win', async () => {
        await store.put({ pk: 'r', sk: 'head', seq: 0 });
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, w) =>
            store.transact([
              {
                kind: 'update',
                key: { pk: 'r', sk: 'head' },
                update: { set: { seq: 1, writer: w } },
                conditions: [{ op: 'eq', attr: 'seq', value: 0 }],
              },
              { kind: 'put', item: { pk: 'r', sk: `idem-${w}`, w } },
            ]),
          ),
        );
        const winners = results.flatMap((r, w) => (r.status === 'fulfilled' ? [w] : []));
        expect(winners).toHaveLength(1);
        const page = await store.query('r', { skPrefix: 'idem-' });
        expect(page.items.map((i) => i.w)).toEqual(winners);
        expect((await store.get({ pk: 'r', sk: 'head' }))?.writer).toBe(winners[0]);
      });
    });

    describe('query', () => {
      it('pages through a partition in sk order, filtered by prefix', async () => {
        const sks = Array.from({ length: 17 }, (_, i) => `ev#${String(i).padStart(3, '0')}`);
        await Promise.all([...sks].reverse().map((sk) => store.put({ pk: 'q', sk, n: sk })));
        await store.put({ pk: 'q', sk: 'meta', n: 'no' });
        await store.put({ pk: 'other', sk: 'ev#000', n: 'no' });
        const seen: string[] = [];
        let after: string | undefined;
        let pages = 0;
        do {
          const page = await store.query('q', { skPrefix: 'ev#', after, limit: 4 });
          seen.push(...page.items.map((i) => i.sk));
          after = page.next;
          pages++;
        } while (after !== undefined && pages < 20);
        expect(seen).toEqual(sks);
        expect(pages).toBeGreaterThanOrEqual(5);
      });

      it('returns an empty page for an unknown partition', async () => {
        expect((await store.query('nobody')).items).toEqual([]);
      });
    });

    describe('ttl', () => {
      it('hides items whose ttl has passed from get and query', async () => {
        const nowS = Math.floor(Date.now() / 1000);
        await store.put({ pk: 'ttl', sk: 'old', ttl: nowS - 60 });
        await store.put({ pk: 'ttl', sk: 'live', ttl: nowS + 3600 });
        expect(await store.get({ pk: 'ttl', sk: 'old' })).toBeUndefined();
        expect(await store.get({ pk: 'ttl', sk: 'live' })).toEqual({
          pk: 'ttl',
          sk: 'live',
          ttl: nowS + 3600,
        });
        expect((await store.query('ttl')).items.map((i) => i.sk)).toEqual(['live']);
      });
    });

    describe('faults', () => {
      it('sees its own conditional put when the reply was lost', async () => {
        const faults = scriptedFaults([{ op: 'put', fault: 'reply-lost' }]);
        const s = await open({ faults, retry: fastRetry });
        await s.put({ pk: 'f', sk: 'idem', token: 't1' }, { conditions: [{ op: 'notExists' }] });
        expect(faults.remaining()).toBe(0);
        expect(await s.get({ pk: 'f', sk: 'idem' })).toEqual({ pk: 'f', sk: 'idem', token: 't1' });
      });

      it('sees its own conditional update when the reply was lost', async () => {
        const faults = scriptedFaults([{ op: 'update', fault: 'reply-lost' }]);
        const s = await open({ faults, retry: fastRetry });
        await s.put({ pk: 'f', sk: 'head', seq: 1 });
        const next = await s.update(
          { pk: 'f', sk: 'head' },
          { set: { seq: 2, hash: 'h2' } },
          { conditions: [{ op: 'eq', attr: 'seq', value: 1 }] },
        );
        expect(next).toEqual({ pk: 'f', sk: 'head', seq: 2, hash: 'h2' });
        expect(faults.remaining()).toBe(0);
      });

      it('sees its own transaction when the reply was lost', async () => {
        const faults = scriptedFaults([{ op: 'transact', fault: 'reply-lost' }]);
        const s = await open({ faults, retry: fastRetry });
        await s.put({ pk: 'f', sk: 'head', seq: 1 });
        await s.transact([
          {
            kind: 'update',
            key: { pk: 'f', sk: 'head' },
            update: { set: { seq: 2 } },
            conditions: [{ op: 'eq', attr: 'seq', value: 1 }],
          },
          {
            kind: 'put',
            item: { pk: 'f', sk: 'idem', token: 't' },
            conditions: [{ op: 'notExists' }],
          },
        ]);
        expect(faults.remaining()).toBe(0);
        expect((await s.get({ pk: 'f', sk: 'head' }))?.seq).toBe(2);
      });

      it('still reports a conflict to a first attempt that finds an equal item', async () => {
        const s = await open({ retry: fastRetry });
        await s.put({ pk: 'f', sk: 'idem', token: 'same' }, { conditions: [{ op: 'notExists' }] });
        const err = await conflictOf(
          s.put({ pk: 'f', sk: 'idem', token: 'same' }, { conditions: [{ op: 'notExists' }] }),
        );
        expect(err).toBeInstanceOf(ConflictError);
      });

      it('still reports a real conflict after a retried attempt', async () => {
        const faults = scriptedFaults([{ op: 'update', fault: 'throttle' }]);
        const s = await open({ faults, retry: fastRetry });
        await s.put({ pk: 'f', sk: 'head', seq: 5 });
        const err = await conflictOf(
          s.update(
            { pk: 'f', sk: 'head' },
            { set: { seq: 2 } },
            { conditions: [{ op: 'eq', attr: 'seq', value: 1 }] },
          ),
        );
        expect(err).toBeInstanceOf(ConflictError);
        expect(err?.current?.seq).toBe(5);
      });

      it.each(['throttle', 'unavailable', 'conflict-409'] as const)(
        'retries an injected %s and succeeds',
        async (fault) => {
          const faults = scriptedFaults([
            { op: 'put', fault, times: 2 },
            { op: 'transact', fault, times: 2 },
            { op: 'get', fault },
            { op: 'query', fault },
          ]);
          const s = await open({ faults, retry: fastRetry });
          await s.put({ pk: 'f', sk: 'a', v: 1 }, { conditions: [{ op: 'notExists' }] });
          await s.transact([{ kind: 'put', item: { pk: 'f', sk: 'b', v: 2 } }]);
          expect(await s.get({ pk: 'f', sk: 'a' })).toEqual({ pk: 'f', sk: 'a', v: 1 });
          expect((await s.query('f')).items.map((i) => i.sk)).toEqual(['a', 'b']);
          expect(faults.remaining()).toBe(0);
        },
      );

      it('gives up with UnavailableError when the store keeps failing, writing nothing', async () => {
        const faults = scriptedFaults([{ op: 'put', fault: 'throttle', times: 10 }]);
        const s = await open({ faults, retry: fastRetry });
        const err = await s.put({ pk: 'f', sk: 'never', v: 1 }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(UnavailableError);
        expect(await s.get({ pk: 'f', sk: 'never' })).toBeUndefined();
      });
    });
  });
};
