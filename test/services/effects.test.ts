import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Appender } from '../../shared/commit/append.js';
import {
  CrashInjectedError,
  DrainingError,
  EffectNotHeldError,
  FencedError,
  LeaseHeldError,
} from '../../shared/domain/errors.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { type BeginOutcome, EFFECT_COMPLETED } from '../../shared/effects/effects.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';
import { waitUntil } from '../support/wait.js';

const T = 'acme';
const S = 'agent-9';

/** An external system (a payment provider) that dedupes by idempotency key and counts charges. */
const paymentProvider = () => {
  const charges = new Map<string, { receipt: string }>();
  let calls = 0;
  return {
    calls: () => calls,
    charge: async (key: string) => {
      calls++;
      const receipt = { receipt: `r-${calls}` };
      charges.set(key, receipt);
      return receipt;
    },
    find: (key: string) => charges.get(key),
  };
};

describe.each(allStores.filter((f) => f.enabled))('effects and leases on $name', (factory) => {
  let stores: StorePair;
  let now: number;
  let ledger: Ledger;
  let ids = 0;

  beforeEach(async () => {
    stores = await factory.make();
    now = Date.now();
    ledger = new Ledger({
      ...stores,
      clock: { now: () => now },
      ids: { newId: () => `holder-${++ids}` },
    });
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const begin = (
    effectKey: string,
    extra: Partial<Parameters<Ledger['effects']['begin']>[0]> = {},
  ) =>
    ledger.effects.begin({
      tenant: T,
      stream: S,
      effectKey,
      kind: 'payment',
      intent: { cents: 500 },
      leaseMs: 10_000,
      ...extra,
    });

  /** What a worker does: begin; run if acquired; wait if in progress; stored result otherwise. */
  const runOnce = async (provider: ReturnType<typeof paymentProvider>, effectKey: string) => {
    for (let i = 0; i < 100; i++) {
      const b: BeginOutcome = await begin(effectKey);
      if (b.status === 'completed') return b.result;
      if (b.status === 'in_progress') {
        await new Promise((r) => setTimeout(r, 5));
        continue;
      }
      if (b.status === 'failed') throw new Error('failed');
      const result = await provider.charge(effectKey);
      await ledger.effects.finish({
        tenant: T,
        stream: S,
        effectKey,
        holder: b.holder,
        outcome: { result },
      });
      return result;
    }
    throw new Error('never finished');
  };

  it('runs the external action once when two workers race the same effect', async () => {
    const provider = paymentProvider();
    const results = await Promise.all([
      runOnce(provider, 'pay-1'),
      runOnce(provider, 'pay-1'),
      runOnce(provider, 'pay-1'),
    ]);
    expect(provider.calls()).toBe(1);
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
    const events = (await ledger.reader.readEvents(T, S)).events.filter(
      (e) => e.type === EFFECT_COMPLETED,
    );
    expect(events).toHaveLength(1);
    expect(events[0]?.payload).toMatchObject({ effectKey: 'pay-1', result: { receipt: 'r-1' } });
  });

  it('hands an unfinished effect to the next worker as unknown outcome, reconciled without a second call', async () => {
    const provider = paymentProvider();
    const first = await begin('pay-2');
    expect(first.status).toBe('acquired');
    await provider.charge('pay-2'); // ...and the worker dies before completing
    const meanwhile = await begin('pay-2');
    expect(meanwhile.status).toBe('in_progress');
    now += 11_000; // its lease runs out
    const next = await begin('pay-2');
    expect(next).toMatchObject({ status: 'unknown_outcome', attempt: 2 });
    if (next.status !== 'unknown_outcome') throw new Error('unreachable');
    const known = provider.find('pay-2'); // reconcile with the external system
    expect(known).toBeDefined();
    await ledger.effects.finish({
      tenant: T,
      stream: S,
      effectKey: 'pay-2',
      holder: next.holder,
      outcome: { result: known ?? null },
    });
    expect(provider.calls()).toBe(1);
    expect(await begin('pay-2')).toMatchObject({ status: 'completed', result: { receipt: 'r-1' } });
    // The dead worker's late completion is refused: it no longer holds the effect.
    if (first.status !== 'acquired') throw new Error('unreachable');
    await expect(
      ledger.effects.finish({
        tenant: T,
        stream: S,
        effectKey: 'pay-2',
        holder: first.holder,
        outcome: { result: { receipt: 'late' } },
      }),
    ).rejects.toBeInstanceOf(EffectNotHeldError);
  });

  it('finishes once: a repeated complete answers the same, a stranger is refused', async () => {
    const b = await begin('pay-3');
    if (b.status !== 'acquired') throw new Error('not acquired');
    const done = {
      tenant: T,
      stream: S,
      effectKey: 'pay-3',
      holder: b.holder,
      outcome: { result: { ok: true } },
    };
    const once = await ledger.effects.finish(done);
    const twice = await ledger.effects.finish(done);
    expect(twice).toEqual(once);
    await expect(ledger.effects.finish({ ...done, holder: 'someone-else' })).rejects.toBeInstanceOf(
      EffectNotHeldError,
    );
    const failed = await begin('pay-4');
    if (failed.status !== 'acquired') throw new Error('not acquired');
    await ledger.effects.finish({
      tenant: T,
      stream: S,
      effectKey: 'pay-4',
      holder: failed.holder,
      outcome: { error: { message: 'declined' } },
    });
    expect(await begin('pay-4')).toMatchObject({
      status: 'failed',
      error: { message: 'declined' },
    });
    const completions = (await ledger.reader.readEvents(T, S)).events.filter((e) =>
      e.type.startsWith('hefesto.effect.'),
    );
    expect(completions.map((e) => e.type)).toEqual([
      'hefesto.effect.completed',
      'hefesto.effect.failed',
    ]);
  });

  it('lists a saga’s compensations latest first, each begun once', async () => {
    for (const [i, key] of ['reserve', 'charge', 'ship'].entries()) {
      now += 1000;
      const b = await begin(key, { sagaId: 'order-1', compensation: { undo: key } });
      if (b.status !== 'acquired') throw new Error('not acquired');
      await ledger.effects.finish({
        tenant: T,
        stream: S,
        effectKey: key,
        holder: b.holder,
        outcome: { result: i },
      });
    }
    const list = await ledger.effects.compensable(T, S, 'order-1');
    expect(list.map((e) => e.effectKey)).toEqual(['ship', 'charge', 'reserve']);
  });

  it('grants leases with growing epochs and refuses a held one', async () => {
    const a = await ledger.leases.acquire(T, S, 'worker-a', 5000);
    expect(a.epoch).toBe(1);
    await expect(ledger.leases.acquire(T, S, 'worker-b', 5000)).rejects.toBeInstanceOf(
      LeaseHeldError,
    );
    expect((await ledger.leases.renew(T, S, 'worker-a', 1, 5000)).epoch).toBe(1);
    await ledger.leases.release(T, S, 'worker-a', 1);
    await expect(ledger.leases.renew(T, S, 'worker-a', 1, 5000)).rejects.toBeInstanceOf(
      FencedError,
    );
    const b = await ledger.leases.acquire(T, S, 'worker-b', 5000);
    expect(b.epoch).toBe(2);
    now += 6000;
    expect((await ledger.leases.acquire(T, S, 'worker-c', 5000)).epoch).toBe(3);
  });

  describe('fencing and hot migration', () => {
    const note = (label: string) => [{ type: 'observation', payload: { label } }];

    it('refuses a write from an older epoch in the same transaction, writing nothing', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', 5000);
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: note('a1'),
        fence: { epoch: a.epoch, checkpoint: false },
      });
      await ledger.leases.release(T, S, 'worker-a', a.epoch);
      const b = await ledger.leases.acquire(T, S, 'worker-b', 5000);
      expect(b.epoch).toBe(a.epoch + 1);
      await expect(
        ledger.appender.append({
          tenant: T,
          stream: S,
          events: note('stale'),
          fence: { epoch: a.epoch, checkpoint: false },
        }),
      ).rejects.toBeInstanceOf(FencedError);
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: note('b1'),
        fence: { epoch: b.epoch, checkpoint: false },
      });
      const labels = (await ledger.reader.readEvents(T, S)).events.map(
        (e) => (e.payload as { label: string }).label,
      );
      expect(labels).toEqual(['a1', 'b1']);
    });

    it('refuses effects to a fenced worker: it can neither take nor finish one', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', 5000);
      const taken = await begin('pay-fenced', { fence: a.epoch });
      if (taken.status !== 'acquired') throw new Error('not acquired');
      await ledger.leases.release(T, S, 'worker-a', a.epoch);
      const b = await ledger.leases.acquire(T, S, 'worker-b', 5000);
      await expect(begin('pay-other', { fence: a.epoch })).rejects.toBeInstanceOf(FencedError);
      await expect(
        ledger.effects.finish({
          tenant: T,
          stream: S,
          effectKey: 'pay-fenced',
          holder: taken.holder,
          outcome: { result: 'late' },
          fence: a.epoch,
        }),
      ).rejects.toBeInstanceOf(FencedError);
      expect(await ledger.effects.get(T, S, 'pay-fenced')).toMatchObject({ status: 'pending' });
      expect(await ledger.effects.get(T, S, 'pay-other')).toBeUndefined();
      expect((await begin('pay-other', { fence: b.epoch })).status).toBe('acquired');
    });

    it('never adopts a fenced writer’s orphan segment', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', 5000);
      const dying = new Appender({
        ...stores,
        clock: { now: () => now },
        crash: (step) => {
          if (step === 'segment-written') throw new CrashInjectedError(step);
        },
      });
      await expect(
        dying.append({
          tenant: T,
          stream: S,
          events: note('orphan-of-a'),
          fence: { epoch: a.epoch, checkpoint: false },
        }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      now += 6000; // A's lease expires; B takes over with the next epoch
      const b = await ledger.leases.acquire(T, S, 'worker-b', 5000);
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: note('b1'),
        fence: { epoch: b.epoch, checkpoint: false },
      });
      const labels = (await ledger.reader.readEvents(T, S)).events.map(
        (e) => (e.payload as { label: string }).label,
      );
      expect(labels).toEqual(['b1']);
      expect(await ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: 1 });
    });

    it('drains: new turns refused, a terminal snapshot written, the old epoch fenced', async () => {
      const a = await ledger.leases.acquire(T, S, 'worker-a', 5000);
      const cp = (
        ops: Array<{ op: 'set'; path: string; value: number }>,
        baseDigest: string,
        epoch: number,
      ) => ledger.checkpoints.checkpoint({ tenant: T, stream: S, ops, baseDigest, fence: epoch });
      const first = await cp([{ op: 'set', path: '/n', value: 1 }], EMPTY_STATE_DIGEST_V2, a.epoch);
      const drained = ledger.drainer.drain(T, S, 'worker-a', a.epoch, 2000);
      // Wait for the drain's first step (the lease marked draining), not for a fixed time:
      // on a loaded machine the emulators take longer than any fixed wait.
      await waitUntil(
        'the lease marked draining',
        async () => (await ledger.leases.get(T, S))?.draining === true,
      );
      await expect(
        cp([{ op: 'set', path: '/n', value: 2 }], first.stateDigest, a.epoch),
      ).rejects.toBeInstanceOf(DrainingError);
      // The in-flight turn's observation still lands during the grace window.
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: note('in-flight'),
        fence: { epoch: a.epoch, checkpoint: false },
      });
      const result = await drained;
      expect(result).toMatchObject({ epoch: a.epoch, seq: 2, snapshot: true });
      await expect(
        ledger.appender.append({
          tenant: T,
          stream: S,
          events: note('late'),
          fence: { epoch: a.epoch, checkpoint: false },
        }),
      ).rejects.toBeInstanceOf(FencedError);
      const b = await ledger.leases.acquire(T, S, 'worker-b', 5000);
      expect(b.epoch).toBe(a.epoch + 1);
      const hydrated = await ledger.states.hydrate(T, S);
      expect(hydrated).toMatchObject({ seq: 2, state: { n: 1 }, baseSeq: 2, deltasApplied: 0 });
      await cp([{ op: 'set', path: '/n', value: 2 }], first.stateDigest, b.epoch);
      expect((await ledger.states.hydrate(T, S)).state).toEqual({ n: 2 });
    });
  });
});
