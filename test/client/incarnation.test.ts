import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { headKey } from '../../shared/chain/storage-keys.js';
import { HefestoClient } from '../../shared/client/client.js';
import { HefestoApiError } from '../../shared/client/errors.js';
import { resume } from '../../shared/client/harness.js';
import type { Json } from '../../shared/client/types.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import {
  compactionWorld,
  type ManualClock,
  manualClock,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * A stream deleted and created again, end to end: the HTTP API, the SDK and the harness over
 * the app in process (the client's fetch is the app's), on every store. Keys of the past
 * life are new requests in the new one; a write naming the past life's incarnation is 409
 * ErrStreamRecreated; a harness run on a deleted id stores its own run.
 */

const ROOT = 'incarnation-root-key-0123456789abcdef';
const T = 'default';

describe.each(allStores.filter((f) => f.enabled))('stream lives over HTTP on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  let app: ReturnType<typeof createApp>;

  beforeEach(async () => {
    clock = manualClock();
    stores = await factory.make(clock);
    world = compactionWorld(stores, {}, clock);
    const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
    const logger = pino({ level: 'silent' });
    app = createApp({ ledger: world.ledger, keys, logger, clock });
  });
  afterEach(() => stores.cleanup());

  const inProcess: typeof fetch = async (input, init) => app.request(String(input), init);
  const newClient = () =>
    new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: ROOT,
      fetch: inProcess,
      retry: { maxAttempts: 1 },
    });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const get = (path: string) => app.request(path, { headers: { authorization: `Bearer ${ROOT}` } });
  const deleteAndCompact = async (stream: string) => {
    const res = await app.request(`/v1/streams/${stream}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ROOT}` },
    });
    expect(res.status).toBe(204);
    await settle(world, (ms) => clock.advance(ms));
    expect(await world.records.get(headKey(T, stream))).toBeUndefined();
  };
  const turn1 = { events: [{ type: 'message', payload: { role: 'user', text: 'hi' } }] };

  it('README: "turn-1" again after DELETE and compaction is written (201, new incarnation)', async () => {
    const first = await post('/v1/streams/run-1/events', turn1, { 'Idempotency-Key': '"turn-1"' });
    expect(first.status).toBe(201);
    const { incarnation: old } = (await first.json()) as { incarnation: string };
    expect(old).toEqual(expect.any(String));
    await deleteAndCompact('run-1');

    const again = await post('/v1/streams/run-1/events', turn1, { 'Idempotency-Key': '"turn-1"' });

    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    const body = (await again.json()) as { firstSeq: number; incarnation: string };
    expect(body.firstSeq).toBe(1);
    expect(body.incarnation).not.toBe(old);
    const head = await get('/v1/streams/run-1');
    expect(head.status).toBe(200);
    expect(await head.json()).toMatchObject({ seq: 1, incarnation: body.incarnation });
  });

  it('README: "turn-1" on another stream is not 422', async () => {
    await post('/v1/streams/run-1/events', turn1, { 'Idempotency-Key': '"turn-1"' });
    const other = await post('/v1/streams/run-2/events', turn1, { 'Idempotency-Key': '"turn-1"' });
    expect(other.status).toBe(201);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a retry with the deleted life’s Hefesto-Incarnation is 409 ErrStreamRecreated, nothing written', async () => {
    const first = await post('/v1/streams/run-1/events', turn1, { 'Idempotency-Key': 'turn-1' });
    const { incarnation: old } = (await first.json()) as { incarnation: string };
    await deleteAndCompact('run-1');
    const life2 = await post('/v1/streams/run-1/events', { events: [{ type: 'b', payload: 2 }] });
    expect(life2.status).toBe(201);

    const retry = await post('/v1/streams/run-1/events', turn1, {
      'Idempotency-Key': 'turn-1',
      'Hefesto-Incarnation': old,
    });
    const checkpoint = await post(
      '/v1/streams/run-1/checkpoints',
      { ops: [{ op: 'set', path: '/a', value: 1 }], baseDigest: '0'.repeat(64) },
      { 'Hefesto-Incarnation': old },
    );

    expect(retry.status).toBe(409);
    expect(await retry.json()).toMatchObject({ code: 'ErrStreamRecreated' });
    expect(checkpoint.status).toBe(409);
    expect(await checkpoint.json()).toMatchObject({ code: 'ErrStreamRecreated' });
    expect(await (await get('/v1/streams/run-1')).json()).toMatchObject({ seq: 1 });
    const bad = await post('/v1/streams/run-1/events', turn1, { 'Hefesto-Incarnation': 'a b' });
    expect(bad.status).toBe(400);
  });

  it('documents Hefesto-Incarnation and ErrStreamRecreated in the OpenAPI document', async () => {
    const doc = JSON.stringify(await (await get('/v1/openapi.json')).json());
    const ops = JSON.parse(doc).paths as Record<string, Record<string, { parameters?: unknown[] }>>;
    for (const path of ['/v1/streams/{streamId}/events', '/v1/streams/{streamId}/checkpoints']) {
      const params = JSON.stringify(ops[path]?.post?.parameters);
      expect(params).toContain('Hefesto-Incarnation');
      expect(JSON.stringify(ops[path]?.post)).toContain('ErrStreamRecreated');
    }
  });

  it('the SDK sends the incarnation it saw: a retry across a delete and a re-create is refused', async () => {
    const worker = newClient();
    const other = newClient();
    const sent = await worker.append('run-1', turn1.events as never, { idempotencyKey: 'turn-1' });
    expect(worker.incarnationOf('run-1')).toBe(sent.incarnation);
    await deleteAndCompact('run-1');
    await other.append('run-1', [{ type: 'b', payload: 2 }]);

    const err = await worker
      .append('run-1', turn1.events as never, { idempotencyKey: 'turn-1' })
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(HefestoApiError);
    expect((err as HefestoApiError).code).toBe('ErrStreamRecreated');
    expect((await other.getStream('run-1')).seq).toBe(1);
    // Refused once, the client forgets that life: its next write goes to the stream as it is.
    expect(worker.incarnationOf('run-1')).toBeUndefined();
    const next = await worker.append('run-1', [{ type: 'c', payload: 3 }]);
    expect(next.lastSeq).toBe(2);
  });

  it('the harness re-run on a deleted id stores its events and state', async () => {
    const client = newClient();
    const runOnce = async (answer: string) => {
      const run = await resume(client, 'agent-1');
      expect(run.turn).toBe(1);
      for (let turn = 1; turn <= 2; turn++) {
        const reply = await run.observe('model', (): Json => `${answer} ${turn}`);
        await run.checkpoint([{ op: 'set', path: `/t${turn}`, value: reply }]);
      }
      return run;
    };
    await runOnce('first');
    await deleteAndCompact('agent-1');

    const second = await runOnce('second');

    expect(second.state).toEqual({ t1: 'second 1', t2: 'second 2' });
    const stored = await client.getState('agent-1');
    expect(stored.state).toEqual({ t1: 'second 1', t2: 'second 2' });
    const { events } = await client.readEvents('agent-1');
    expect(events.filter((e) => e.type === 'observation').map((e) => e.payload)).toEqual([
      { turn: 1, name: 'model', index: 0, value: 'second 1' },
      { turn: 2, name: 'model', index: 0, value: 'second 2' },
    ]);
    // A resumed run of this life continues it under its incarnation.
    const resumed = await resume(client, 'agent-1');
    expect(resumed.turn).toBe(3);
  });

  it('the harness run whose stream is deleted and created again under it stops', async () => {
    const client = newClient();
    const run = await resume(client, 'agent-2');
    await run.observe('model', (): Json => 'one');
    await deleteAndCompact('agent-2');
    await newClient().append('agent-2', [{ type: 'other', payload: 1 }]);

    const err = await run.checkpoint([{ op: 'set', path: '/a', value: 1 }]).catch((e) => e);

    expect((err as HefestoApiError).code).toBe('ErrStreamRecreated');
    expect((await client.getStream('agent-2')).seq).toBe(1);
  });
});
