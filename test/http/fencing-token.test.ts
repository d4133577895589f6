import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

/**
 * Found by the API fuzz test: a write refused as fenced must never land. A fencing token of 0
 * was accepted by the schema, refused by the lease (409 ErrFenced), and its segment, written
 * with epoch 0 like an unfenced one, was then rolled forward by the next writer: the refused
 * events appeared in the stream.
 */
describe.each(STORE_FACTORIES)('Hefesto-Fencing-Token on $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  const writes = [
    { path: '/v1/streams/run-1/events', body: { events: [{ type: 'refused', payload: 1 }] } },
    { path: '/v1/streams/run-1/effects/pay-1/begin', body: { kind: 'payment', intent: {} } },
    { path: '/v1/streams/run-1/sagas/order-1/compensate', body: undefined },
  ];

  it.each(writes)('refuses token 0 on $path as invalid input (epochs start at 1)', async (w) => {
    const key = await h.newKey('acme');

    const res = await h.request(w.path, {
      key,
      method: 'POST',
      body: w.body,
      headers: { 'hefesto-fencing-token': '0' },
    });

    expect(res.status).toBe(400);
    expect((await readJson<ProblemBody>(res)).issues[0]).toMatchObject({
      in: 'header',
      path: 'Hefesto-Fencing-Token',
    });
  });

  it('never lets a write with token 0 land, in the tenant that sent it or another', async () => {
    const key = await h.newKey('acme');
    const other = await h.newKey('globex');
    for (const k of [key, other]) {
      await h.append(k, 'run-1', [{ type: 'first', payload: 1 }]);
      await h.request('/v1/streams/run-1/lease', { key: k, body: { owner: 'w', ttlMs: 60_000 } });
      await h.request('/v1/streams/run-1/lease/release', {
        key: k,
        body: { owner: 'w', epoch: 1 },
      });
    }

    const refused = await h.request('/v1/streams/run-1/events', {
      key,
      body: { events: [{ type: 'refused', payload: 'must never land' }] },
      headers: { 'hefesto-fencing-token': '0' },
    });
    await h.append(key, 'run-1', [{ type: 'next', payload: 2 }]);
    await h.append(other, 'run-1', [{ type: 'next', payload: 2 }]);

    expect(refused.status).toBeGreaterThanOrEqual(400);
    for (const k of [key, other]) {
      const page = await readJson<{ events: Array<{ seq: number; type: string }> }>(
        h.request('/v1/streams/run-1/events', { key: k }),
      );
      expect(page.events.map((e) => [e.seq, e.type])).toEqual([
        [1, 'first'],
        [2, 'next'],
      ]);
    }
  });
});
