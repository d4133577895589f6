import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { effectRecordKey } from '../../shared/chain/storage-keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Item } from '../../shared/ports/record-store.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 2 (effects): a finished effect's record is bound to its ledger event. An
 * edited record (its result, error, compensation, intent, kind or the seq it names), or
 * another effect's copied under its key, is ErrTamperedLedger naming `effect` for begin's
 * stored outcome, the effect list and a saga's compensations, never the edited value; a
 * deleted finished record is refused by begin (its event's key remains) and noticed by
 * /verify, not by a list page (it pages by key); pending effects have no event and are
 * served as stored.
 */

const T = 'acme';
const S = 'agent-9';
const tampered = { code: 'ErrTamperedLedger', object: 'effect' };

describe.each(allStores.filter((f) => f.enabled))('effect records bound on $name', (factory) => {
  let stores: StorePair;
  let ledger: Ledger;
  let now = Date.now();
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
  afterEach(() => stores.cleanup());

  const fresh = () => new Ledger({ ...stores, clock: { now: () => now } });
  const begin = (effectKey: string, l = ledger) =>
    l.effects.begin({
      tenant: T,
      stream: S,
      effectKey,
      kind: 'payment',
      intent: { amount: 5 },
      sagaId: 'order-1',
      compensation: { refund: effectKey },
    });
  const finish = async (effectKey: string, outcome: { result: never } | { error: never }) => {
    const b = await begin(effectKey);
    if (b.status !== 'acquired') throw new Error(`not acquired: ${b.status}`);
    return ledger.effects.finish({ tenant: T, stream: S, effectKey, holder: b.holder, outcome });
  };
  /** pay-1 completed, pay-2 failed, pay-3 pending (its worker is still on it). */
  const effects = async () => {
    await ledger.appender.append({
      tenant: T,
      stream: S,
      events: [{ type: 'start', payload: {} }],
    });
    const paid = await finish('pay-1', { result: { receipt: 'r-1' } as never });
    const failed = await finish('pay-2', { error: { message: 'declined' } as never });
    await begin('pay-3');
    return { paid: paid.eventSeq as number, failed: failed.eventSeq as number };
  };
  const list = (l = fresh()) => l.effectList.list(T, S, { limit: 100 });
  const edit = async (effectKey: string, fields: Record<string, unknown>) => {
    const key = effectRecordKey(T, S, effectKey);
    await stores.records.put({ ...((await stores.records.get(key)) as Item), ...fields } as Item);
  };

  it('serves finished effects as their events committed them, and /verify passes', async () => {
    const { paid } = await effects();
    const l = fresh();
    expect(await begin('pay-1', l)).toMatchObject({
      status: 'completed',
      result: { receipt: 'r-1' },
    });
    expect((await list(l)).effects.map((e) => e.status)).toEqual([
      'completed',
      'failed',
      'acquired',
    ]);
    expect(await l.effects.compensable(T, S, 'order-1')).toHaveLength(1);
    expect(await l.verifier.verify(T, S)).toMatchObject({ ok: true });
    const [event] = (await l.reader.readEvents(T, S, { from: paid, limit: 1 })).events;
    expect(event?.payload).toMatchObject({
      intent: { amount: 5 },
      compensation: { refund: 'pay-1' },
    });
  });

  it('fails closed on an edited result, error, compensation, kind or event seq', async () => {
    const { paid, failed } = await effects();
    const edits: Array<[string, Record<string, unknown>, number]> = [
      ['pay-1', { result: { receipt: 'forged' } }, paid],
      ['pay-2', { error: { message: 'ok after all' } }, failed],
      ['pay-1', { compensation: { refund: 'someone-else' } }, paid],
      ['pay-1', { kind: 'push' }, paid],
      ['pay-1', { eventSeq: failed }, failed],
    ];
    for (const [effectKey, fields, seq] of edits) {
      const key = effectRecordKey(T, S, effectKey);
      const original = (await stores.records.get(key)) as Item;
      await edit(effectKey, fields);
      const what = `${effectKey} ${Object.keys(fields).join()}`;
      const l = fresh();
      if (!('kind' in fields)) {
        // A begin with another kind is ErrEffectMismatch before anything is served.
        await expect(begin(effectKey, l), what).rejects.toMatchObject({ ...tampered, seq });
      }
      await expect(list(l), what).rejects.toMatchObject({ ...tampered, seq });
      expect(await l.verifier.verify(T, S), what).toMatchObject({ ok: false, object: 'effect' });
      await stores.records.put(original);
    }
    await expect(fresh().effects.compensable(T, S, 'order-1')).resolves.toHaveLength(1);
    await edit('pay-1', { compensation: { refund: 'someone-else' } });
    await expect(fresh().effects.compensable(T, S, 'order-1')).rejects.toMatchObject(tampered);
  });

  it('refuses another effect’s record copied under an effect’s key', async () => {
    await effects();
    const other = (await stores.records.get(effectRecordKey(T, S, 'pay-2'))) as Item;
    await stores.records.put({ ...other, ...effectRecordKey(T, S, 'pay-1') });
    const l = fresh();
    await expect(begin('pay-1', l)).rejects.toMatchObject(tampered);
    await expect(list(l)).rejects.toMatchObject(tampered);
    expect(await l.verifier.verify(T, S)).toMatchObject({ ok: false, object: 'effect' });
  });

  it('refuses to begin again an effect whose finished record was deleted; /verify notices it, a list page cannot', async () => {
    const { paid } = await effects();
    await stores.records.delete(effectRecordKey(T, S, 'pay-1'));
    await expect(begin('pay-1', fresh())).rejects.toMatchObject({ ...tampered, seq: paid });
    expect(await stores.records.get(effectRecordKey(T, S, 'pay-1'))).toBeUndefined();
    expect((await list()).effects.map((e) => e.effectKey)).toEqual(['pay-2', 'pay-3']);
    expect(await fresh().verifier.verify(T, S)).toMatchObject({
      ok: false,
      object: 'effect',
      seq: paid,
    });
  });

  it('serves pending effects and finished ones whose event is not kept yet as stored', async () => {
    await effects();
    await edit('pay-3', { intent: { amount: 500 } });
    await edit('pay-1', { eventSeq: 0, result: { receipt: 'r-2' } });
    const listed = (await list()).effects;
    expect(listed.find((e) => e.effectKey === 'pay-3')?.intent).toEqual({ amount: 500 });
    // The next call on pay-1 keeps its event's seq again, and then serves what it committed.
    await expect(begin('pay-1', fresh())).rejects.toMatchObject(tampered);
  });
});
