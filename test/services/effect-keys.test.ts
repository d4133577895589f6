import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streamPk } from '../../shared/chain/storage-keys.js';
import { Appender, type CommitStep } from '../../shared/commit/append.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import {
  EFFECT_COMPLETED,
  EffectService,
  type FinishRequest,
} from '../../shared/effects/effects.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The keys the effect service derives: scoped by stream, out of reach of a client's
 * Idempotency-Key, and the effect's ledger event written once however late the next call on
 * the effect comes (its seq is kept on the effect record; idempotency records expire in 24 h).
 */

const T = 'acme';
const HOUR = 3_600_000;

describe.each(allStores.filter((f) => f.enabled))('effect keys on $name', (factory) => {
  let stores: StorePair;
  let now: number;
  let ledger: Ledger;
  let ids = 0;
  const clock = { now: () => now };

  beforeEach(async () => {
    now = Date.now();
    // The stores share the clock: idempotency records expire when the service's time says so.
    stores = await factory.make(clock);
    ledger = new Ledger({ ...stores, clock, ids: { newId: () => `holder-${++ids}` } });
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const begin = (stream: string, effectKey: string, effects = ledger.effects) =>
    effects.begin({ tenant: T, stream, effectKey, kind: 'payment', intent: { cents: 5 } });

  /** begin + complete, as a worker does; `effects` may be a service that crashes. */
  const pay = async (stream: string, effectKey: string, effects = ledger.effects) => {
    const b = await begin(stream, effectKey, effects);
    if (b.status !== 'acquired') throw new Error(`not acquired: ${b.status}`);
    const done: FinishRequest = {
      tenant: T,
      stream,
      effectKey,
      holder: b.holder,
      outcome: { result: { receipt: `${stream}/${effectKey}` } },
    };
    return effects.finish(done);
  };

  const effectEvents = async (stream: string) =>
    (await ledger.reader.readEvents(T, stream)).events.filter((e) =>
      e.type.startsWith('hefesto.effect.'),
    );

  /** An effect service whose appends die right after `step`. */
  const crashingAfter = (step: CommitStep) =>
    new EffectService({
      ...stores,
      clock,
      ids: { newId: () => `holder-${++ids}` },
      reader: ledger.reader,
      appender: new Appender({
        ...stores,
        clock,
        crash: (at) => {
          if (at === step) throw new CrashInjectedError(at);
        },
      }),
    });

  it('keeps one effect key apart on two streams of a tenant', async () => {
    await pay('s-one', 'pay-1');
    await pay('s-two', 'pay-1');
    for (const stream of ['s-one', 's-two']) {
      const events = await effectEvents(stream);
      expect(events.map((e) => e.type)).toEqual([EFFECT_COMPLETED]);
      expect(events[0]?.payload).toMatchObject({ result: { receipt: `${stream}/pay-1` } });
      expect(await begin(stream, 'pay-1')).toMatchObject({
        status: 'completed',
        result: { receipt: `${stream}/pay-1` },
      });
      expect((await ledger.effects.get(T, stream, 'pay-1'))?.eventSeq).toBe(events[0]?.seq);
    }
  });

  it('cannot be poisoned by a client Idempotency-Key', async () => {
    for (const key of ['effect:pay-9:completed', 'effect#completed#pay-9', 'idem#effect#pay-9']) {
      await ledger.appender.append({
        tenant: T,
        stream: 's-one',
        events: [{ type: 'observation', payload: { key } }],
        idempotency: { key, digest: sha256Hex(key) },
      });
    }
    await pay('s-one', 'pay-9');
    expect((await effectEvents('s-one')).map((e) => e.payload)).toEqual([
      expect.objectContaining({ effectKey: 'pay-9' }),
    ]);
    expect(await begin('s-one', 'pay-9')).toMatchObject({ status: 'completed' });
  });

  it('writes the effect event once, however late the next call comes (25 h)', async () => {
    const record = await pay('s-one', 'pay-2');
    const [event] = await effectEvents('s-one');
    expect(record.eventSeq).toBe(event?.seq);
    now += 25 * HOUR;
    expect(await begin('s-one', 'pay-2')).toMatchObject({ status: 'completed' });
    expect(await effectEvents('s-one')).toHaveLength(1);
  });

  it('writes the event of an effect whose writer died before it, once, even 25 h later', async () => {
    await expect(pay('s-one', 'pay-3', crashingAfter('head-read'))).rejects.toBeInstanceOf(
      CrashInjectedError,
    );
    expect(await ledger.effects.get(T, 's-one', 'pay-3')).toMatchObject({
      status: 'completed',
      eventSeq: 0,
    });
    now += 25 * HOUR;
    expect(await begin('s-one', 'pay-3')).toMatchObject({ status: 'completed' });
    expect(await begin('s-one', 'pay-3')).toMatchObject({ status: 'completed' });
    const events = await effectEvents('s-one');
    expect(events).toHaveLength(1);
    expect((await ledger.effects.get(T, 's-one', 'pay-3'))?.eventSeq).toBe(events[0]?.seq);
  });

  it('does not write the event twice when its writer died before keeping its seq (25 h later)', async () => {
    await expect(pay('s-one', 'pay-4', crashingAfter('committed'))).rejects.toBeInstanceOf(
      CrashInjectedError,
    );
    expect(await effectEvents('s-one')).toHaveLength(1);
    expect((await ledger.effects.get(T, 's-one', 'pay-4'))?.eventSeq).toBe(0);
    now += 25 * HOUR;
    expect(await begin('s-one', 'pay-4')).toMatchObject({ status: 'completed' });
    const events = await effectEvents('s-one');
    expect(events).toHaveLength(1);
    expect((await ledger.effects.get(T, 's-one', 'pay-4'))?.eventSeq).toBe(events[0]?.seq);
  });

  describe('effect records written before the seq was kept', () => {
    /** What the previous version stored: no eventSeq, its event under a tenant-wide key. */
    const legacy = async (stream: string, effectKey: string, withEvent: boolean) => {
      const holder = `old-${effectKey}`;
      await stores.records.put({
        pk: streamPk(T, stream),
        sk: `effect#${effectKey}`,
        effectKey,
        kind: 'payment',
        intent: { cents: 5 },
        compensation: null,
        sagaId: null,
        status: 'completed',
        holder,
        leaseExpiresAt: now,
        attempts: 1,
        result: { receipt: 'old' },
        error: null,
        createdAt: now,
        finishedAt: now,
      });
      if (!withEvent) return;
      await ledger.appender.append({
        tenant: T,
        stream,
        events: [
          {
            type: EFFECT_COMPLETED,
            payload: { effectKey, kind: 'payment', sagaId: null, result: { receipt: 'old' } },
          },
        ],
        idempotency: {
          key: `effect:${effectKey}:completed`,
          digest: sha256Hex(canonicalJson({ effectKey, status: 'completed', holder })),
        },
      });
    };

    it('finds the event by its old key within 24 h and keeps its seq', async () => {
      await ledger.appender.append({
        tenant: T,
        stream: 's-one',
        events: [{ type: 'observation', payload: 1 }],
      });
      await legacy('s-one', 'pay-5', true);
      expect(await begin('s-one', 'pay-5')).toMatchObject({
        status: 'completed',
        result: { receipt: 'old' },
      });
      expect(await effectEvents('s-one')).toHaveLength(1);
      expect((await ledger.effects.get(T, 's-one', 'pay-5'))?.eventSeq).toBe(2);
    });

    it('finds the event in the stream once its old key expired, and does not write it again', async () => {
      await legacy('s-one', 'pay-6', true);
      now += 25 * HOUR;
      expect(await begin('s-one', 'pay-6')).toMatchObject({ status: 'completed' });
      expect(await begin('s-one', 'pay-6')).toMatchObject({ status: 'completed' });
      expect(await effectEvents('s-one')).toHaveLength(1);
      expect((await ledger.effects.get(T, 's-one', 'pay-6'))?.eventSeq).toBe(1);
    });

    it('writes the missing event of an old record once (the cross-stream collision victim)', async () => {
      await legacy('s-one', 'pay-7', true);
      await legacy('s-two', 'pay-7', false);
      expect(await begin('s-two', 'pay-7')).toMatchObject({ status: 'completed' });
      expect(await begin('s-two', 'pay-7')).toMatchObject({ status: 'completed' });
      expect((await effectEvents('s-two')).map((e) => e.payload)).toEqual([
        expect.objectContaining({ effectKey: 'pay-7' }),
      ]);
      expect(await effectEvents('s-one')).toHaveLength(1);
    });
  });
});
