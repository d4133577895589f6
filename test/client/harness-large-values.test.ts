import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { resume } from '../../shared/client/harness.js';
import { INLINE_BUDGET_BYTES, pickByRef } from '../../shared/client/large-values.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 22: the harness's `run.checkpoint` with values between the server's 256 KiB limit on
 * a checkpoint's ops and the old 1 MiB `largeValueBytes` default failed (413). It now sends the
 * largest values by ref until the ops fit, whatever their sizes: 300 KiB, 900 KiB, 5 MB, and
 * several values that fit alone but not together. In process over memory, local and the
 * emulators, every request measured at the fetch layer.
 */

vi.setConfig({ testTimeout: 300_000 });

const ROOT = 'harness-large-root-key-0123456789abcdef';
const KiB = 1024;

const serve = (stores: StorePair) => {
  const clock = { now: () => Date.now() };
  const ledger = new Ledger({ ...stores, clock });
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const checkpointBodies: number[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = init?.body;
    if (url.pathname.endsWith('/checkpoints') && typeof body === 'string') {
      checkpointBodies.push(Buffer.byteLength(body));
    }
    return app.fetch(new Request(input, init));
  }) as typeof globalThis.fetch;
  const client = new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: ROOT, fetch });
  return { client, checkpointBodies };
};

/** A string of `bytes` characters. */
const text = (bytes: number, tag: string) => `${tag}:`.padEnd(bytes, tag.slice(0, 1));

describe('pickByRef', () => {
  it('takes every value over the threshold, then the largest until the rest fits', () => {
    expect(pickByRef([10, 300_000, 150_000, 150_000], 256 * KiB, 192 * KiB)).toEqual(
      new Set([1, 2]),
    );
    expect(pickByRef([100, 200], 256 * KiB, 192 * KiB)).toEqual(new Set());
    expect(pickByRef([50_000, 50_000, 50_000, 50_000, 50_000], 256 * KiB, 192 * KiB)).toEqual(
      new Set([0, 1]),
    );
  });
});

describe.each(allStores.filter((s) => s.enabled))('harness large values on $name', (f) => {
  let stores: StorePair;
  beforeAll(async () => {
    stores = await f.make();
  });
  afterAll(async () => {
    await stores.cleanup();
  });

  it.each([
    ['300 KiB', 300 * KiB],
    ['900 KiB', 900 * KiB],
    ['5 MB', 5_000_000],
  ])('checkpoints a %s value in a turn and resumes it equal', async (name, bytes) => {
    const world = serve(stores);
    const stream = `run-${bytes}`;
    const run = await resume(world.client, stream);
    const doc = { body: text(bytes, 'd'), name };

    await run.checkpoint([
      { op: 'set', path: '/doc', value: doc },
      { op: 'set', path: '/note', value: text(150 * KiB, 'n') },
      { op: 'set', path: '/turn', value: 1 },
    ]);

    for (const sent of world.checkpointBodies) expect(sent).toBeLessThan(256 * KiB);
    const again = await resume(world.client, stream);
    expect(again.turn).toBe(2);
    expect(again.state).toEqual({ doc, note: text(150 * KiB, 'n'), turn: 1 });
  });

  it('sends values that fit alone but not together partly by ref', async () => {
    const world = serve(stores);
    const run = await resume(world.client, 'run-many');
    const ops = Array.from({ length: 6 }, (_, i) => ({
      op: 'set' as const,
      path: `/v${i}`,
      value: text(60 * KiB, `v${i}`),
    }));

    await run.checkpoint(ops);

    expect(world.checkpointBodies).toHaveLength(1);
    expect(world.checkpointBodies[0]).toBeLessThanOrEqual(INLINE_BUDGET_BYTES + KiB);
    const again = await resume(world.client, 'run-many');
    expect(again.state).toEqual(Object.fromEntries(ops.map((o) => [o.path.slice(1), o.value])));
  });
});
