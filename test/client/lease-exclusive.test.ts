import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { resume } from '../../shared/client/harness.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from '../http/harness.js';

/** Exclusive leases through the API, the client SDK and the harness (in process). */

describe.each(STORE_FACTORIES)('exclusive leases via the API on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const client = () =>
    new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: key,
      tenant: 'acme',
      verify: true,
      fetch: async (input, init) => h.app.request(input as string, init),
    });

  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    h.request(`/v1/streams/run-1${path}`, { key, body, headers });
  const note = { events: [{ type: 'observation', payload: 1 }] };

  it('answers 409 ErrFenced to a write without the epoch while the lease is held', async () => {
    const lease = await read<{ epoch: number; exclusive: boolean }>(
      post('/lease', { owner: 'worker-a', ttlMs: 10_000 }),
    );
    expect(lease).toMatchObject({ epoch: 1, exclusive: true });
    const refused = await post('/events', note);
    expect(refused.status).toBe(409);
    expect(await read<ProblemBody>(refused)).toMatchObject({
      code: 'ErrFenced',
      detail: expect.stringMatching(/worker-a holds this stream's lease exclusively \(epoch 1/),
    });
    expect(await h.headSeq(key, 'run-1')).toBeUndefined();
    expect((await post('/events', note, { 'hefesto-fencing-token': '1' })).status).toBe(201);
    const shown = await read<{ exclusive: boolean }>(h.request('/v1/streams/run-1/lease', { key }));
    expect(shown.exclusive).toBe(true);
  });

  it('lets writes without the epoch through a lease taken with exclusive: false', async () => {
    const lease = await read<{ exclusive: boolean }>(
      post('/lease', { owner: 'worker-a', ttlMs: 10_000, exclusive: false }),
    );
    expect(lease.exclusive).toBe(false);
    expect((await post('/events', note)).status).toBe(201);
    expect((await post('/events', note, { 'hefesto-fencing-token': '7' })).status).toBe(409);
  });

  it('gives the same owner a new epoch on every acquire, fencing the old one', async () => {
    await post('/lease', { owner: 'worker-a', ttlMs: 10_000 });
    const again = await read<{ epoch: number }>(
      post('/lease', { owner: 'worker-a', ttlMs: 10_000 }),
    );
    expect(again.epoch).toBe(2);
    const stale = await post('/events', note, { 'hefesto-fencing-token': '1' });
    expect(await read<ProblemBody>(stale)).toMatchObject({
      code: 'ErrFenced',
      detail: expect.stringMatching(/token 1 is stale: the lease was acquired again at epoch 2/),
    });
  });

  it('stops a second worker that skips the lease from forking a harness run', async () => {
    const holder = await resume(client(), 'run-1', { lease: { owner: 'worker-a' } });
    await holder.observe('model', () => 'one');
    await holder.checkpoint([{ op: 'set', path: '/n', value: 1 }]);

    const rogue = await resume(client(), 'run-1'); // no lease
    expect(rogue.turn).toBe(2);
    await expect(rogue.observe('model', () => 'two')).rejects.toMatchObject({ code: 'ErrFenced' });
    await expect(rogue.checkpoint([{ op: 'set', path: '/n', value: 9 }])).rejects.toMatchObject({
      code: 'ErrFenced',
    });
    await expect(rogue.effect('pay-1', () => 'charged', { kind: 'payment' })).rejects.toMatchObject(
      { code: 'ErrFenced' },
    );

    await holder.observe('model', () => 'two');
    await holder.checkpoint([{ op: 'set', path: '/n', value: 2 }]);
    await holder.stop({ release: true });
    expect((await client().getState('run-1')).state).toEqual({ n: 2 });
    expect((await client().getStream('run-1')).deltas).toBe(2);
    expect(await client().verifyLocally('run-1')).toMatchObject({ ok: true });
  });

  it('shares the stream when the harness takes its lease with exclusive: false', async () => {
    const holder = await resume(client(), 'run-1', {
      lease: { owner: 'worker-a', exclusive: false },
    });
    await holder.observe('model', () => 'one');
    const other = await resume(client(), 'run-1');
    await other.observe('tool', () => 'side note');
    await holder.stop({ release: true });
    expect((await client().getStream('run-1')).seq).toBe(2);
  });
});
