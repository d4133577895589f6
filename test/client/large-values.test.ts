import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkKey } from '../../shared/chain/storage-keys.js';
import { HefestoClient, type HefestoClientOptions } from '../../shared/client/client.js';
import {
  ClientVerificationError,
  DivergenceDetectedError,
  HefestoApiError,
  ValueTooLargeError,
} from '../../shared/client/errors.js';
import { resume } from '../../shared/client/harness.js';
import { stateDigestAfter } from '../../shared/client/set-value.js';
import type { Json } from '../../shared/client/types.js';
import { emptyStateDigest } from '../../shared/domain/state-digest.js';
import { chunksOfValue, parseChunk } from '../../shared/domain/state-v2/index.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { MAX_UPLOAD_BYTES } from '../../shared/state/values.js';
import { TEN_MIB } from '../support/large-values.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Large values through the client SDK (docs/state-v2.md, "Large values"): putValue / setValue
 * upload a value as chunks and set it by ref; readValue / valuePages read it back verified.
 * In process over memory, local and the emulators, every request seen at the fetch layer.
 */

const ROOT = 'large-values-root-key-0123456789abcdef';
const EMPTY = emptyStateDigest(2);

interface Sent {
  method: string;
  path: string;
  bytes: number;
  body?: Uint8Array;
}

const serve = (stores: StorePair, maxValueBytes?: number) => {
  const clock = { now: () => Date.now() };
  const ledger = new Ledger({ ...stores, clock }, { maxValueBytes });
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const sent: Sent[] = [];
  /** Chunks the server has answered 201 for, in answer order. */
  const answered: string[] = [];
  const flight = { now: 0, max: 0 };
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    flight.max = Math.max(flight.max, ++flight.now);
    const body = init?.body as Uint8Array | string | undefined;
    const bytes = body === undefined ? 0 : typeof body === 'string' ? body.length : body.length;
    sent.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      bytes,
      body: body instanceof Uint8Array ? body : undefined,
    });
    const res = await Promise.resolve(app.fetch(new Request(input, init))).finally(
      () => flight.now--,
    );
    if (init?.method === 'PUT' && res.status === 201) answered.push(url.pathname.slice(11));
    return res;
  }) as typeof globalThis.fetch;
  const client = (options: Partial<HefestoClientOptions> = {}) =>
    new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: ROOT,
      fetch,
      sleep: async () => {},
      ...options,
    });
  const tenantClient = async (tenant: string, options: Partial<HefestoClientOptions> = {}) => {
    const { key } = await client().createKey({ tenant, scopes: ['read', 'write'] });
    return client({ apiKey: key, tenant, ...options });
  };
  return { fetch, sent, answered, flight, client, tenantClient };
};

const puts = (sent: Sent[]) => sent.filter((s) => s.method === 'PUT');

describe.each(allStores.filter((s) => s.enabled))('large values by the client on $name', (f) => {
  let stores: StorePair;
  beforeAll(async () => {
    stores = await f.make();
  });
  afterAll(async () => {
    await stores.cleanup();
  });

  it('sets a 10 MiB value in chunk-sized uploads and a small checkpoint, and reads it back equal', async () => {
    const world = serve(stores);
    const acme = await world.tenantClient('acme');
    world.sent.length = 0;
    const result = await acme.setValue('doc-1', '/doc', TEN_MIB, {
      baseDigest: EMPTY,
      baseState: {},
    });
    const { chunks } = chunksOfValue(TEN_MIB);
    const uploads = puts(world.sent);
    expect(result.ref.size).toBeGreaterThan(10 * 1024 * 1024);
    expect(uploads.length).toBe(chunks.length);
    expect(new Set(uploads.map((u) => u.path)).size).toBe(chunks.length);
    for (const u of uploads) expect(u.bytes).toBeLessThanOrEqual(MAX_UPLOAD_BYTES);
    // Concurrent, and bounded: four chunk requests in flight at most.
    expect(world.flight.max).toBeGreaterThan(1);
    expect(world.flight.max).toBeLessThanOrEqual(4);
    const checkpoints = world.sent.filter((s) => s.path.endsWith('/checkpoints'));
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]?.bytes).toBeLessThan(1024);
    // Children before parents: every chunk a PUT names was answered before that PUT was sent.
    for (const [i, u] of uploads.entries()) {
      const parsed = parseChunk(u.body as Uint8Array);
      const named =
        'pages' in parsed
          ? parsed.pages
          : 'slots' in parsed
            ? parsed.slots.filter((s) => s.inline === undefined).map((s) => s.hash)
            : [];
      const before = new Set(world.answered.slice(0, i));
      for (const h of named) expect(before.has(h.toString('hex'))).toBe(true);
    }

    world.sent.length = 0;
    world.flight.max = 0;
    expect(await acme.readValue(result.ref, { concurrency: 2 })).toEqual(TEN_MIB);
    expect(world.flight.max).toBeLessThanOrEqual(2);
    const gets = world.sent.filter((s) => s.path.startsWith('/v1/chunks/'));
    expect(gets.length).toBe(chunks.length);
    const pages: Json[][] = [];
    for await (const page of acme.valuePages(result.ref)) pages.push(page);
    expect(pages.flat()).toEqual(TEN_MIB);
    expect(Math.max(...pages.map((p) => p.length))).toBeLessThanOrEqual(64);
    // By path, through the state route.
    expect((await acme.getValue('doc-1', '/doc/10599')).value).toBe((TEN_MIB as string[])[10_599]);
  }, 120_000);

  it('computes the state digest the server computes; a wrong one is refused, nothing written', async () => {
    const world = serve(stores);
    const acme = await world.tenantClient('acme');
    const big = { text: 'ü'.repeat(700 * 1024), n: [1, 2, 3] };
    const first = await acme.setValue('doc-2', '/big', big, {
      baseDigest: EMPTY,
      baseState: {},
      ops: [{ op: 'set', path: '/turn', value: 1 }],
      label: 'one',
    });
    const expected = stateDigestAfter({}, [
      { op: 'set', path: '/big', value: big },
      { op: 'set', path: '/turn', value: 1 },
    ]);
    expect(first.stateDigest).toBe(expected);
    const state = await acme.getState('doc-2');
    expect(state.stateDigest).toBe(expected);
    expect(state.state).toEqual({ big, turn: 1 });

    // A base state the client got wrong yields another digest: the divergence trap fires.
    const wrong = acme.setValue('doc-2', '/big2', big, {
      baseDigest: state.stateDigest,
      baseState: { ...state.state, extra: true },
    });
    await expect(wrong).rejects.toMatchObject({ code: 'ErrDivergenceDetected', status: 409 });
    const forged = acme.setValue('doc-2', '/big2', big, {
      baseDigest: state.stateDigest,
      stateDigest: 'f'.repeat(64),
    });
    await expect(forged).rejects.toMatchObject({ code: 'ErrDivergenceDetected' });
    expect((await acme.getStream('doc-2')).seq).toBe(first.seq);
    // And with the right base it lands on top.
    const second = await acme.setValue('doc-2', '/big2', big, {
      baseDigest: state.stateDigest,
      baseState: state.state,
    });
    expect((await acme.getValue('doc-2', '/big2/text')).value).toBe(big.text);
    expect(second.stateDigest).toBe((await acme.getState('doc-2')).stateDigest);
  });

  it('retries uploads whose replies were lost: harmless, stored once, same ref', async () => {
    const world = serve(stores);
    const { key } = await world.client().createKey({ tenant: 'acme', scopes: ['read', 'write'] });
    let lost = 0;
    const lossy = (async (input: string | URL | Request, init?: RequestInit) => {
      const res = await world.fetch(input, init);
      // The first three chunk uploads are stored, then their replies vanish.
      if (init?.method === 'PUT' && lost < 3) {
        lost++;
        throw new TypeError('fetch failed: socket hang up');
      }
      return res;
    }) as typeof fetch;
    const acme = world.client({ apiKey: key, tenant: 'acme', fetch: lossy });
    const value = { text: 'z'.repeat(3 * 1024 * 1024) };
    world.sent.length = 0;
    const { ref, seq } = await acme.setValue('doc-3', '/v', value, {
      baseDigest: EMPTY,
      baseState: {},
    });
    const { chunks } = chunksOfValue(value);
    expect(lost).toBe(3);
    expect(puts(world.sent)).toHaveLength(chunks.length + 3);
    expect(await acme.readValue(ref)).toEqual(value);
    // Uploading the same value again is the same ref, every chunk answered again.
    expect(await acme.putValue(value)).toEqual(ref);
    expect((await acme.getStream('doc-3')).seq).toBe(seq);
  });

  it('refuses a value over the limit before any request, and surfaces server refusals typed', async () => {
    const world = serve(stores, 1024 * 1024);
    const small = await world.tenantClient('acme', { maxValueBytes: 1024 * 1024 });
    world.sent.length = 0;
    const over = { text: 'o'.repeat(1024 * 1024) };
    const refused = await small.putValue(over).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValueTooLargeError);
    expect((refused as ValueTooLargeError).message).toContain('at most 1048576 bytes');
    expect((refused as ValueTooLargeError).code).toBe('ErrPayloadTooLarge');
    await expect(
      small.setValue('doc-4', '/v', over, { baseDigest: EMPTY, baseState: {} }),
    ).rejects.toBeInstanceOf(ValueTooLargeError);
    expect(world.sent).toHaveLength(0);

    // A client that allows more than this server: the server's 400, as a HefestoApiError.
    const lax = await world.tenantClient('acme');
    const answer = await lax
      .setValue('doc-4', '/v', over, { baseDigest: EMPTY })
      .catch((err: unknown) => err);
    expect(answer).toBeInstanceOf(HefestoApiError);
    expect(answer).toMatchObject({ code: 'ErrInvalidInput', status: 400 });
    expect((answer as Error).message).toContain('at most 1048576 bytes');
    // A ref whose chunks were never uploaded: 400, nothing written.
    const unknown = { hash: 'a'.repeat(64), size: 2000 };
    await expect(
      lax.checkpoint('doc-4', {
        ops: [{ op: 'set', path: '/v', ref: unknown }],
        baseDigest: EMPTY,
      }),
    ).rejects.toMatchObject({ code: 'ErrInvalidDelta', status: 422 });
    await expect(lax.getStream('doc-4')).rejects.toMatchObject({ code: 'ErrStreamNotFound' });
  });

  it("keeps tenants apart: B cannot read A's chunks by hash, nor set them by ref", async () => {
    const world = serve(stores);
    const acme = await world.tenantClient('acme');
    const globex = await world.tenantClient('globex');
    const secret = { text: 's'.repeat(1536 * 1024) };
    const ref = await acme.putValue(secret);
    await expect(globex.readValue(ref)).rejects.toMatchObject({ code: 'ErrNotFound', status: 404 });
    const pages = globex.valuePages(ref);
    await expect(pages.next()).rejects.toMatchObject({ code: 'ErrNotFound' });
    await expect(
      globex.checkpoint('g-1', { ops: [{ op: 'set', path: '/s', ref }], baseDigest: EMPTY }),
    ).rejects.toMatchObject({ code: 'ErrInvalidDelta' });
    expect(await acme.readValue(ref)).toEqual(secret);
  });

  it('lets a durable run set a value over the body limit in one turn, resumed and replayed', async () => {
    const world = serve(stores);
    const acme = await world.tenantClient('acme');
    const doc = { pages: Array.from({ length: 5000 }, (_, i) => `page ${i} `.padEnd(1000, '~')) };
    const run = await resume(acme, 'run-big');
    world.sent.length = 0;
    const { stateDigest } = await run.checkpoint([
      { op: 'set', path: '/doc', value: doc },
      { op: 'set', path: '/turn', value: 1 },
    ]);
    const [checkpoint, ...others] = world.sent.filter((s) => s.path.endsWith('/checkpoints'));
    expect(others).toHaveLength(0);
    expect(checkpoint?.bytes).toBeLessThan(1024);
    expect(puts(world.sent).length).toBe(chunksOfValue(doc).chunks.length);
    expect((await acme.getState('run-big')).stateDigest).toBe(stateDigest);

    const next = await resume(acme, 'run-big');
    expect(next.turn).toBe(2);
    expect(next.state).toEqual({ doc, turn: 1 });
    const replay = await resume(acme, 'run-big', { replay: true });
    await replay.checkpoint([
      { op: 'set', path: '/doc', value: doc },
      { op: 'set', path: '/turn', value: 1 },
    ]);
    expect(replay.stateDigest).toBe(stateDigest);
    const drifted = await resume(acme, 'run-big', { replay: true });
    const other = { pages: [...doc.pages.slice(0, -1), 'changed'] };
    await expect(
      drifted.checkpoint([
        { op: 'set', path: '/doc', value: other },
        { op: 'set', path: '/turn', value: 1 },
      ]),
    ).rejects.toBeInstanceOf(DivergenceDetectedError);
  }, 120_000);

  it('refuses a tampered chunk on read', async () => {
    const world = serve(stores);
    const acme = await world.tenantClient('acme');
    const value = Array.from({ length: 3000 }, (_, i) => `item ${i}`.padEnd(600, '.'));
    const ref = await acme.putValue(value);
    const { chunks } = chunksOfValue(value);
    const victim = chunks[0]?.hash as string;
    await stores.tamper(chunkKey('acme', victim), (b) => {
      b[b.length - 1] = (b[b.length - 1] ?? 0) ^ 1;
      return b;
    });
    await expect(acme.readValue(ref)).rejects.toBeInstanceOf(ClientVerificationError);
    const read = async () => {
      for await (const _ of acme.valuePages(ref)) {
        // reads until the tampered page
      }
    };
    await expect(read()).rejects.toBeInstanceOf(ClientVerificationError);
  });
});
