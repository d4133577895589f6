import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../shared/domain/limits.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The depth limit against every store, the emulators included (issue 11 item 6): DynamoDB
 * refuses an attribute nested 32 levels deep, and an effect's intent and result are attributes
 * of its record. With the default limit, the deepest effect a body may carry is stored and read
 * back on every adapter; one level more is 400 and writes nothing (it used to be a 500 there).
 */

const ROOT = 'root-key-for-depth-tests-0123456789';
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const MAX = DEFAULT_LIMITS.maxJsonDepth;

describe.each(allStores.filter((f) => f.enabled))('JSON depth on $name stores', (factory) => {
  let stores: StorePair;
  let app: ReturnType<typeof createApp>;
  const call = (path: string, body?: string) =>
    Promise.resolve(
      app.request(path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' },
        body,
      }),
    );

  beforeEach(async () => {
    stores = await factory.make();
    const clock = { now: () => Date.now() };
    const ledger = new Ledger({ ...stores, clock });
    const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
    app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('stores and returns the deepest effect intent and result a body may carry', async () => {
    const begin = await call(
      '/v1/streams/s/effects/pay-1/begin',
      `{"kind":"pay","intent":${nested(MAX - 1)}}`,
    );
    expect(begin.status).toBe(200);
    const { holder } = (await begin.json()) as { holder: string };
    const done = await call(
      '/v1/streams/s/effects/pay-1/complete',
      `{"holder":"${holder}","result":${nested(MAX - 1)}}`,
    );
    expect(done.status).toBe(200);
    // The same effect again (same kind and intent: another intent is ErrEffectMismatch).
    const again = await call(
      '/v1/streams/s/effects/pay-1/begin',
      `{"kind":"pay","intent":${nested(MAX - 1)}}`,
    );
    expect(await again.json()).toMatchObject({
      status: 'completed',
      result: JSON.parse(nested(MAX - 1)),
    });
  });

  it('refuses one level more with 400, storing nothing', async () => {
    const begin = await call(
      '/v1/streams/s/effects/pay-2/begin',
      `{"kind":"pay","intent":${nested(MAX)}}`,
    );
    expect(begin.status).toBe(400);
    expect(await begin.json()).toMatchObject({ code: 'ErrInvalidInput' });
    const fresh = await call('/v1/streams/s/effects/pay-2/begin', '{"kind":"pay","intent":1}');
    expect(await fresh.json()).toMatchObject({ status: 'acquired', attempt: 1 });
  });

  it('appends and reads back the deepest event payload a body may carry', async () => {
    const payload = nested(MAX - 3);
    const res = await call(
      '/v1/streams/deep/events',
      `{"events":[{"type":"o","payload":${payload}}]}`,
    );
    expect(res.status).toBe(201);
    const read = await call('/v1/streams/deep/events');
    expect(read.status).toBe(200);
    expect(await read.text()).toContain(`"payload":${payload}`);
  });
});
