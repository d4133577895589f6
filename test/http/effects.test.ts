import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { waitUntil } from '../support/wait.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
  T0,
} from './harness.js';

/** Leases with fencing, drain, exactly-once effects and sagas over HTTP, in process. */

const S = 'agent';

interface LeaseBody {
  owner: string;
  epoch: number;
  expiresAt: string;
  draining: boolean;
  exclusive?: boolean;
  active?: boolean;
}
interface Begun {
  status: 'acquired' | 'unknown_outcome' | 'in_progress' | 'completed' | 'failed';
  effectKey: string;
  holder: string;
  attempt?: number;
  result?: unknown;
  error?: unknown;
}
interface Compensation {
  sagaId: string;
  compensations: Array<{
    effectKey: string;
    compensationKey: string;
    compensation: unknown;
    begin: Begun;
  }>;
}
interface EventsBody {
  events: Array<{ seq: number; type: string; payload: { effectKey: string } }>;
}

const token = (epoch: number | string) => ({ 'hefesto-fencing-token': String(epoch) });

describe.each(STORE_FACTORIES)('leases and effects API on $name stores', (factory) => {
  let h: Harness;
  let key: string;

  const post = (path: string, body?: unknown, headers: Record<string, string> = {}) =>
    h.request(`/v1/streams/${S}${path}`, { method: 'POST', key, body, headers });
  const acquire = (owner: string, ttlMs = 10_000) => post('/lease', { owner, ttlMs });
  const getLease = () => read<LeaseBody>(h.request(`/v1/streams/${S}/lease`, { key }));
  const note = (epoch: number, text = 'note') =>
    post('/events', { events: [{ type: 'observation', payload: { text } }] }, token(epoch));
  const checkpoint = (epoch: number, baseDigest: string, value: number) =>
    post('/checkpoints', { ops: [{ op: 'set', path: '/n', value }], baseDigest }, token(epoch));
  const begin = (effectKey: string, body: Record<string, unknown> = {}) =>
    post(`/effects/${effectKey}/begin`, { kind: 'payment', intent: { cents: 500 }, ...body });
  const complete = (effectKey: string, holder: string, result: unknown) =>
    post(`/effects/${effectKey}/complete`, { holder, result });
  const completedEvents = async () =>
    (
      await read<EventsBody>(
        h.request(`/v1/streams/${S}/events?type=hefesto.effect.completed`, { key }),
      )
    ).events.map((e) => e.payload.effectKey);
  const expectProblem = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(await read<ProblemBody>(res)).toMatchObject({ code });
  };

  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  describe('POST /v1/streams/{streamId}/lease (and renew, release, GET)', () => {
    it('grants epoch 1, renews it for its owner and shows it on GET', async () => {
      const res = await acquire('worker-a');
      expect(res.status).toBe(200);
      expect(await read<LeaseBody>(res)).toEqual({
        owner: 'worker-a',
        epoch: 1,
        expiresAt: new Date(T0 + 10_000).toISOString(),
        draining: false,
        exclusive: true,
      });
      h.advance(4000);
      const renewed = await post('/lease/renew', { owner: 'worker-a', epoch: 1, ttlMs: 20_000 });
      expect(await read<LeaseBody>(renewed)).toMatchObject({
        epoch: 1,
        expiresAt: new Date(T0 + 24_000).toISOString(),
      });
      expect(await getLease()).toMatchObject({ owner: 'worker-a', epoch: 1, active: true });
    });

    it('refuses a second owner with 409 ErrLeaseHeld, and hands over with epoch + 1 after release', async () => {
      await acquire('worker-a');
      await expectProblem(await acquire('worker-b'), 409, 'ErrLeaseHeld');
      expect((await post('/lease/release', { owner: 'worker-a', epoch: 1 })).status).toBe(204);
      expect(await getLease()).toMatchObject({ epoch: 1, active: false });
      await expectProblem(
        await post('/lease/renew', { owner: 'worker-a', epoch: 1, ttlMs: 5000 }),
        409,
        'ErrFenced',
      );
      expect(await read<LeaseBody>(acquire('worker-b'))).toMatchObject({ epoch: 2 });
    });

    it('lets the next owner take an expired lease', async () => {
      await acquire('worker-a', 5000);
      h.advance(5001);
      expect(await read<LeaseBody>(acquire('worker-b'))).toMatchObject({
        owner: 'worker-b',
        epoch: 2,
      });
    });

    it('answers 404 for a stream without a lease', async () => {
      expect((await h.request(`/v1/streams/${S}/lease`, { key })).status).toBe(404);
    });
  });

  describe('Hefesto-Fencing-Token', () => {
    it('refuses an append and a checkpoint of an older epoch with 409 ErrFenced, writing nothing', async () => {
      await acquire('worker-a');
      expect((await note(1, 'a1')).status).toBe(201);
      const first = await read<{ stateDigest: string }>(checkpoint(1, EMPTY_STATE_DIGEST_V2, 1));
      await post('/lease/release', { owner: 'worker-a', epoch: 1 });
      expect(await read<LeaseBody>(acquire('worker-b'))).toMatchObject({ epoch: 2 });

      await expectProblem(await note(1, 'stale'), 409, 'ErrFenced');
      await expectProblem(await checkpoint(1, first.stateDigest, 2), 409, 'ErrFenced');
      expect(await h.headSeq(key, S)).toBe(2);
      expect((await checkpoint(2, first.stateDigest, 2)).status).toBe(201);
      expect(await h.headSeq(key, S)).toBe(3);
    });

    it('answers 400 for a token that is not an epoch', async () => {
      for (const bad of ['abc', '-1', '1.5', '1234567890123456']) {
        const body = { events: [{ type: 'observation', payload: 1 }] };
        expect((await post('/events', body, token(bad))).status, bad).toBe(400);
        const ops = [{ op: 'set', path: '/n', value: 1 }];
        const cp = await post(
          '/checkpoints',
          { ops, baseDigest: EMPTY_STATE_DIGEST_V2 },
          token(bad),
        );
        expect(cp.status, bad).toBe(400);
        const effect = { kind: 'payment', intent: null };
        expect((await post('/effects/pay-1/begin', effect, token(bad))).status, bad).toBe(400);
      }
      expect(await h.headSeq(key, S)).toBeUndefined();
    });
  });

  describe('POST /v1/streams/{streamId}/lease/drain', () => {
    it('refuses new turns while draining, snapshots the head, releases and fences the old epoch', async () => {
      await acquire('worker-a');
      const first = await read<{ stateDigest: string }>(checkpoint(1, EMPTY_STATE_DIGEST_V2, 1));
      const drained = post('/lease/drain', { owner: 'worker-a', epoch: 1, graceMs: 5000 });
      await waitUntil('the lease marked draining', async () => (await getLease()).draining);

      await expectProblem(await checkpoint(1, first.stateDigest, 2), 409, 'ErrDraining');
      expect((await note(1, 'in-flight')).status).toBe(201); // the turn's own writes still land
      const res = await drained;
      expect(res.status).toBe(200);
      expect(await read(res)).toEqual({
        epoch: 1,
        seq: 2,
        stateDigest: first.stateDigest,
        snapshot: true,
      });
      const snaps = await h.objects.list(`t/acme/s/${S}/snap/`);
      expect(snaps.items.map((o) => o.key.split('/').at(-1)?.slice(0, 16))).toEqual([
        '0000000000000002',
      ]);

      await expectProblem(await note(1, 'late'), 409, 'ErrFenced');
      expect(await read<LeaseBody>(acquire('worker-b'))).toMatchObject({
        epoch: 2,
        draining: false,
      });
      expect((await checkpoint(2, first.stateDigest, 2)).status).toBe(201);
      expect(await h.headSeq(key, S)).toBe(3);
    });

    it('refuses a drain by anyone but the holder with 409 ErrFenced', async () => {
      await acquire('worker-a');
      const res = await post('/lease/drain', { owner: 'worker-b', epoch: 1 });
      await expectProblem(res, 409, 'ErrFenced');
      expect(await getLease()).toMatchObject({ owner: 'worker-a', draining: false, active: true });
    });
  });

  describe('POST /v1/streams/{streamId}/effects/{effectKey}/begin|complete|fail', () => {
    it('acquires, completes once, and answers later begins with the stored result', async () => {
      const begun = await read<Begun>(begin('pay-1'));
      expect(begun).toMatchObject({ status: 'acquired', effectKey: 'pay-1', attempt: 1 });
      const done = await complete('pay-1', begun.holder, { receipt: 'r-1' });
      expect(await read(done)).toEqual({
        effectKey: 'pay-1',
        status: 'completed',
        result: { receipt: 'r-1' },
      });
      const again = await complete('pay-1', begun.holder, { receipt: 'r-1' });
      expect(again.status).toBe(200);
      for (let i = 0; i < 2; i++) {
        expect(await read(begin('pay-1'))).toEqual({
          status: 'completed',
          effectKey: 'pay-1',
          result: { receipt: 'r-1' },
        });
      }
      expect(await completedEvents()).toEqual(['pay-1']);
    });

    it('refuses a complete by anyone but the holder with 409 ErrEffectNotHeld', async () => {
      const begun = await read<Begun>(begin('pay-1'));
      await expectProblem(await complete('pay-1', 'someone-else', 1), 409, 'ErrEffectNotHeld');
      expect((await complete('pay-1', begun.holder, 1)).status).toBe(200);
      await expectProblem(await complete('pay-1', 'someone-else', 1), 409, 'ErrEffectNotHeld');
    });

    it('refuses the same key for another kind with 422 ErrEffectMismatch', async () => {
      await begin('pay-1');
      await expectProblem(await begin('pay-1', { kind: 'email' }), 422, 'ErrEffectMismatch');
    });

    it('gives the effect to exactly one of two concurrent begins', async () => {
      const both = await Promise.all([read<Begun>(begin('pay-1')), read<Begun>(begin('pay-1'))]);
      expect(both.map((b) => b.status).sort()).toEqual(['acquired', 'in_progress']);
    });

    it('hands an expired holder’s effect to the next caller as unknown_outcome', async () => {
      const first = await read<Begun>(begin('pay-1', { leaseMs: 5000 }));
      expect(await read(begin('pay-1'))).toMatchObject({ status: 'in_progress' });
      h.advance(5001);
      const next = await read<Begun>(begin('pay-1'));
      expect(next).toMatchObject({ status: 'unknown_outcome', attempt: 2 });
      expect(next.holder).not.toBe(first.holder);
      await expectProblem(await complete('pay-1', first.holder, 'late'), 409, 'ErrEffectNotHeld');
      expect((await complete('pay-1', next.holder, 'reconciled')).status).toBe(200);
      expect(await read(begin('pay-1'))).toMatchObject({
        status: 'completed',
        result: 'reconciled',
      });
    });

    it('answers a failed effect’s later begins with its stored error', async () => {
      const begun = await read<Begun>(begin('pay-1'));
      const failed = await post('/effects/pay-1/fail', {
        holder: begun.holder,
        error: { message: 'declined' },
      });
      expect(await read(failed)).toEqual({
        effectKey: 'pay-1',
        status: 'failed',
        error: { message: 'declined' },
      });
      expect(await read(begin('pay-1'))).toEqual({
        status: 'failed',
        effectKey: 'pay-1',
        error: { message: 'declined' },
      });
      expect(await completedEvents()).toEqual([]);
    });
  });

  describe('POST /v1/streams/{streamId}/sagas/{sagaId}/compensate', () => {
    it('begins each compensation once, latest first, and answers completed ones after', async () => {
      for (const step of ['reserve', 'charge', 'ship']) {
        h.advance(1000);
        const b = await read<Begun>(
          begin(step, { kind: step, sagaId: 'order-1', compensation: { undo: step } }),
        );
        await complete(step, b.holder, { done: step });
      }
      const first = await read<Compensation>(post('/sagas/order-1/compensate'));
      expect(first.compensations.map((c) => [c.compensationKey, c.compensation])).toEqual([
        ['compensate:ship', { undo: 'ship' }],
        ['compensate:charge', { undo: 'charge' }],
        ['compensate:reserve', { undo: 'reserve' }],
      ]);
      expect(first.compensations.map((c) => c.begin.status)).toEqual(Array(3).fill('acquired'));
      const racing = await read<Compensation>(post('/sagas/order-1/compensate'));
      expect(racing.compensations.map((c) => c.begin.status)).toEqual(Array(3).fill('in_progress'));

      for (const c of first.compensations) {
        const res = await complete(c.compensationKey, c.begin.holder, { undone: c.effectKey });
        expect(res.status).toBe(200);
      }
      const after = await read<Compensation>(post('/sagas/order-1/compensate'));
      expect(after.compensations.map((c) => c.begin)).toEqual(
        ['ship', 'charge', 'reserve'].map((k) => ({
          status: 'completed',
          effectKey: `compensate:${k}`,
          result: { undone: k },
        })),
      );
      expect((await completedEvents()).sort()).toEqual(
        [
          'charge',
          'compensate:charge',
          'compensate:reserve',
          'compensate:ship',
          'reserve',
          'ship',
        ].sort(),
      );
    });
  });

  it('documents the lease, effect and saga routes in the OpenAPI document', async () => {
    const doc = await read<{ paths: Record<string, Record<string, unknown>> }>(
      h.request('/v1/openapi.json'),
    );
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented).toEqual(
      expect.arrayContaining([
        'GET /v1/streams/{streamId}/lease',
        'POST /v1/streams/{streamId}/lease',
        'POST /v1/streams/{streamId}/lease/renew',
        'POST /v1/streams/{streamId}/lease/release',
        'POST /v1/streams/{streamId}/lease/drain',
        'POST /v1/streams/{streamId}/effects/{effectKey}/begin',
        'POST /v1/streams/{streamId}/effects/{effectKey}/complete',
        'POST /v1/streams/{streamId}/effects/{effectKey}/fail',
        'POST /v1/streams/{streamId}/sagas/{sagaId}/compensate',
      ]),
    );
  });
});
