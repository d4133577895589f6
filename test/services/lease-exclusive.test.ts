import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Appender, type AppendRequest } from '../../shared/commit/append.js';
import { CrashInjectedError, FencedError } from '../../shared/domain/errors.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Exclusive leases: while one is held, writes without its epoch are refused (in the commit
 * transaction), and no batch the lease refused ever lands, by its writer's late commit or by
 * another writer rolling it forward. Every acquisition takes a new epoch.
 */

const T = 'acme';
const S = 'run-1';
const TTL = 5000;

const note = (label: string) => [{ type: 'observation', payload: { label } }];

/** A record store whose transactions wait at a gate while it is closed (a slow writer). */
const gated = (inner: RecordStore) => {
  let open: () => void = () => {};
  let gate: Promise<void> | undefined;
  let waiting: () => void = () => {};
  const reached = new Promise<void>((r) => {
    waiting = r;
  });
  const store: RecordStore = {
    get: (k) => inner.get(k),
    put: (i, o) => inner.put(i, o),
    update: (k, u, o) => inner.update(k, u, o),
    delete: (k, o) => inner.delete(k, o),
    query: (pk, o) => inner.query(pk, o),
    transact: async (ops) => {
      if (gate) {
        waiting();
        await gate;
      }
      return inner.transact(ops);
    },
  };
  return {
    store,
    close: () => {
      gate = new Promise((r) => {
        open = r;
      });
    },
    reached,
    open: () => open(),
  };
};

describe.each(allStores.filter((f) => f.enabled))('exclusive leases on $name', (factory) => {
  let stores: StorePair;
  let now: number;
  let ledger: Ledger;
  const clock = { now: () => now };

  beforeEach(async () => {
    now = Date.now();
    stores = await factory.make(clock);
    ledger = new Ledger({ ...stores, clock });
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const append = (label: string, extra: Partial<AppendRequest> = {}) =>
    ledger.appender.append({ tenant: T, stream: S, events: note(label), ...extra });
  const fenced = (epoch: number) => ({ fence: { epoch, checkpoint: false } });
  const labels = async (stream = S) =>
    (await ledger.reader.readEvents(T, stream)).events.map(
      (e) => (e.payload as { label?: string }).label,
    );
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => 'accepted',
      (err: unknown) => (err instanceof FencedError ? err.message : `${err}`),
    );

  describe('while held', () => {
    it('refuses appends, checkpoints, forks and effects without the epoch, writing nothing', async () => {
      await ledger.leases.acquire(T, S, 'worker-a', TTL);
      expect(await refusal(append('rogue'))).toMatch(/worker-a holds .* exclusively \(epoch 1/);
      expect(await ledger.appender.readHead(T, S)).toMatchObject({ exists: false });

      await append('a1', fenced(1));
      const checkpoint = ledger.checkpoints.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/n', value: 1 }],
        baseDigest: EMPTY_STATE_DIGEST_V2,
      });
      expect(await refusal(checkpoint)).toMatch(/exclusively/);
      const begin = ledger.effects.begin({
        tenant: T,
        stream: S,
        effectKey: 'pay-1',
        kind: 'payment',
        intent: 1,
      });
      expect(await refusal(begin)).toMatch(/exclusively/);
      expect(await ledger.effects.get(T, S, 'pay-1')).toBeUndefined();

      await ledger.leases.acquire(T, 'run-2', 'worker-b', TTL);
      const fork = ledger.checkpoints.fork({ tenant: T, source: S, at: 1, newStreamId: 'run-2' });
      expect(await refusal(fork)).toMatch(/worker-b holds/);
      expect(await ledger.appender.readHead(T, 'run-2')).toMatchObject({ exists: false });

      expect(await labels()).toEqual(['a1']);
      expect(await ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 1 });
    });

    it('accepts writes without the epoch again once it is released or has expired', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', TTL);
      await ledger.leases.release(T, S, 'worker-a', a.epoch);
      await append('after-release');
      await ledger.leases.acquire(T, S, 'worker-b', TTL);
      now += TTL;
      await append('after-expiry');
      expect(await labels()).toEqual(['after-release', 'after-expiry']);
    });

    it('keeps today’s behaviour under a non-exclusive lease, stale tokens still fenced', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', TTL, { exclusive: false });
      expect(a.exclusive).toBe(false);
      await append('unfenced');
      await append('a1', fenced(a.epoch));
      const begun = await ledger.effects.begin({
        tenant: T,
        stream: S,
        effectKey: 'pay-1',
        kind: 'payment',
        intent: 1,
      });
      expect(begun.status).toBe('acquired');
      await ledger.leases.release(T, S, 'worker-a', a.epoch);
      await ledger.leases.acquire(T, S, 'worker-b', TTL, { exclusive: false });
      expect(await refusal(append('stale', fenced(a.epoch)))).toMatch(/stale/);
      expect(await labels()).toEqual(['unfenced', 'a1']);
    });
  });

  describe('epochs', () => {
    it('gives every acquisition a new epoch: a restarted owner fences its predecessor', async () => {
      const before = await ledger.leases.acquire(T, S, 'worker-a', TTL);
      await append('before', fenced(before.epoch));
      const restarted = await ledger.leases.acquire(T, S, 'worker-a', TTL); // same name, alive
      expect(restarted.epoch).toBe(before.epoch + 1);
      expect(await refusal(append('zombie', fenced(before.epoch)))).toMatch(
        /token 1 is stale: the lease was acquired again at epoch 2 \(worker-a holds it\)/,
      );
      await expect(ledger.leases.renew(T, S, 'worker-a', before.epoch, TTL)).rejects.toBeInstanceOf(
        FencedError,
      );
      await append('after', fenced(restarted.epoch));
      now += TTL;
      expect((await ledger.leases.acquire(T, S, 'worker-a', TTL)).epoch).toBe(3);
      expect(await labels()).toEqual(['before', 'after']);
    });

    it('says what happened to a refused token', async () => {
      expect(await refusal(append('x', fenced(5)))).toBe(
        'fencing token 5 names no lease of this stream',
      );
      await ledger.leases.acquire(T, S, 'worker-a', TTL);
      expect(await refusal(append('x', fenced(5)))).toBe(
        "fencing token 5 is from the future: the stream's lease is at epoch 1",
      );
      await ledger.leases.release(T, S, 'worker-a', 1);
      expect(await refusal(append('x', fenced(1)))).toBe('the lease of epoch 1 was released');
      await ledger.leases.acquire(T, S, 'worker-b', TTL);
      now += TTL + 1;
      expect(await refusal(append('x', fenced(1)))).toMatch(
        /token 1 is stale: the lease was acquired again at epoch 2 \(worker-b held it\)/,
      );
      expect(await ledger.appender.readHead(T, S)).toMatchObject({ exists: false });
    });
  });

  describe('batches the lease refused', () => {
    it('never rolls forward a refused batch, even after the lease ended', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', TTL);
      await append('a1', fenced(a.epoch));
      expect(await refusal(append('rogue'))).toMatch(/exclusively/); // its segment stays behind
      await ledger.leases.release(T, S, 'worker-a', a.epoch);
      await append('next');
      expect(await labels()).toEqual(['a1', 'next']);
      expect(await ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 2 });
    });

    it('replaces a dead unfenced writer’s orphan found while the lease is held', async () => {
      const dying = new Appender({
        ...stores,
        clock,
        crash: (step) => {
          if (step === 'segment-written') throw new CrashInjectedError(step);
        },
      });
      await expect(
        dying.append({ tenant: T, stream: S, events: note('orphan') }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      const a = await ledger.leases.acquire(T, S, 'worker-a', TTL);
      await append('a1', fenced(a.epoch));
      expect(await labels()).toEqual(['a1']);
      expect(await ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 1 });
    });

    it('bars a slow unfenced writer whose segment was replaced from committing it later', async () => {
      for (const existing of [false, true]) {
        const stream = existing ? 'run-existing' : 'run-new';
        if (existing) {
          await ledger.appender.append({ tenant: T, stream, events: note('first') });
        }
        const gate = gated(stores.records);
        const slow = new Appender({ ...stores, records: gate.store, clock });
        const a = await ledger.leases.acquire(T, stream, 'worker-a', TTL);
        gate.close();
        const late = refusal(slow.append({ tenant: T, stream, events: note('slow') }));
        await gate.reached; // its segment is written, its commit on its way
        const other = ledger.appender.append({ tenant: T, stream, events: note('other') });
        expect(await refusal(other)).toMatch(/exclusively/); // it took the slow one's place
        await ledger.leases.release(T, stream, 'worker-a', a.epoch);
        gate.open();
        expect(await late).toMatch(/refused it; nothing was written: retry/);
        await ledger.appender.append({ tenant: T, stream, events: note('next') });
        expect(await labels(stream)).toEqual(existing ? ['first', 'next'] : ['next']);
        expect(await ledger.reader.verify(T, stream)).toMatchObject({ ok: true });
      }
    });
  });
});
