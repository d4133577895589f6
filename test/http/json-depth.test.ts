import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { genesisHash, type LedgerEvent } from '../../shared/domain/event.js';
import { DEFAULT_LIMITS, exceedsDepth } from '../../shared/domain/limits.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  ROOT_KEY,
  readJson,
  STORE_FACTORIES,
} from '../http/harness.js';

/**
 * Issue 11 item 6: a value nested thousands of levels deep was accepted (201) and from then on
 * every read page holding it answered 500 (stack overflow while serializing it again). Every
 * JSON body is now refused past the depth limit before anything reads it, and reads answer the
 * stored bytes as they are, so a deep event stored by an older version still reads.
 */

/** A JSON text nesting `depth` arrays (built as text: a value this deep cannot be stringified). */
const deepText = (depth: number, leaf = '1') => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;
const deepValue = (depth: number): unknown => JSON.parse(deepText(depth));
const DEEP = 5000;

/**
 * Older versions canonicalized with canonicalize@5, which handled any depth; the pinned 4.0.0
 * recurses and refuses such a value (InvalidInputError), so no version from now on can store
 * one. To store the event an older version did, the test registers the canonical text of that
 * one value (for nested arrays JCS is the text itself); everything else canonicalizes as usual.
 */
const olderCanonical = vi.hoisted(() => new WeakMap<object, string>());
vi.mock('../../shared/domain/canonical.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../shared/domain/canonical.js')>();
  return {
    ...real,
    canonicalJson: (value: unknown) =>
      (typeof value === 'object' && value !== null && olderCanonical.get(value)) ||
      real.canonicalJson(value as never),
  };
});
const olderDeepValue = (depth: number): unknown => {
  const value = deepValue(depth) as object;
  olderCanonical.set(value, deepText(depth));
  return value;
};

interface OpenApiDoc {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>>;
}

/** Every (method, path) of the OpenAPI document that takes a JSON body. */
const jsonRoutes = async (h: Harness) => {
  const doc = await readJson<OpenApiDoc>(h.request('/v1/openapi.json'));
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, op]) => op.requestBody?.content?.['application/json'] !== undefined)
      .map(([method, _]) => ({ method: method.toUpperCase(), path })),
  );
};

/** A concrete URL for an OpenAPI path template (the document's paths start with /v1). */
const urlOf = (template: string) =>
  template.replace('{streamId}', 'deep-1').replace(/\{[^}]+\}/g, 'x1');

describe('exceedsDepth', () => {
  it('measures objects and arrays, not scalars, without recursion', () => {
    expect(exceedsDepth(1, 0)).toBe(false);
    expect(exceedsDepth({}, 0)).toBe(true);
    expect(exceedsDepth({ a: [1, { b: 'x' }] }, 3)).toBe(false);
    expect(exceedsDepth({ a: [1, { b: 'x' }] }, 2)).toBe(true);
    expect(exceedsDepth([[], [[[]]]], 3)).toBe(true);
    expect(exceedsDepth(deepValue(200_000), 1_000_000)).toBe(false);
    expect(exceedsDepth(deepValue(200_000), 64)).toBe(true);
  });
});

describe.each(STORE_FACTORIES)('JSON nesting depth on $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  const post = (url: string, body: string, key = ROOT_KEY) =>
    h.request(url, { method: 'POST', key, body });

  it('refuses a 5,000-deep body on every route that takes JSON, writing nothing', async () => {
    const routes = await jsonRoutes(h);
    expect(routes.length).toBeGreaterThanOrEqual(10);
    for (const { method, path } of routes) {
      const res = await h.request(urlOf(path), {
        method,
        key: ROOT_KEY,
        body: `{"value":${deepText(DEEP)}}`,
      });
      const problem = await readJson<ProblemBody>(res);
      expect([method, path, res.status]).toEqual([method, path, 400]);
      expect(problem.code).toBe('ErrInvalidInput');
      expect(problem.detail).toContain(`nests deeper than ${DEFAULT_LIMITS.maxJsonDepth} levels`);
    }
    expect((await h.objects.list('')).items).toEqual([]);
    expect((await h.request('/v1/streams/deep-1', { key: ROOT_KEY })).status).toBe(404);
  });

  it('refuses deep event payloads, checkpoint values and effect results in their own fields', async () => {
    const bodies: Array<[string, string]> = [
      [
        '/v1/streams/deep-1/events',
        `{"events":[{"type":"observation","payload":${deepText(DEEP)}}]}`,
      ],
      [
        '/v1/streams/deep-1/checkpoints',
        `{"baseDigest":"${EMPTY_STATE_DIGEST_V2}","ops":[{"op":"set","path":"/a","value":${deepText(DEEP)}}]}`,
      ],
      ['/v1/streams/deep-1/effects/pay-1/begin', `{"kind":"payment","intent":${deepText(DEEP)}}`],
      ['/v1/streams/deep-1/effects/pay-1/complete', `{"holder":"h","result":${deepText(DEEP)}}`],
    ];
    for (const [url, body] of bodies) {
      const res = await post(url, body);
      expect([url, res.status]).toEqual([url, 400]);
      expect((await readJson<ProblemBody>(res)).detail).toContain('nests deeper');
    }
    expect((await h.objects.list('')).items).toEqual([]);
    expect((await h.request('/v1/streams/deep-1', { key: ROOT_KEY })).status).toBe(404);
  });

  it('takes a payload right at the limit, counting the body itself, and refuses one level more', async () => {
    // {"events":[{"payload": ...}]} puts the payload 3 levels down.
    const room = DEFAULT_LIMITS.maxJsonDepth - 3;
    const at = await post(
      '/v1/streams/edge/events',
      `{"events":[{"type":"observation","payload":${deepText(room)}}]}`,
    );
    const over = await post(
      '/v1/streams/edge/events',
      `{"events":[{"type":"observation","payload":${deepText(room + 1)}}]}`,
    );
    expect(at.status).toBe(201);
    expect(over.status).toBe(400);
  });

  it('counts a checkpoint path towards the depth, so no state grows deeper than the limit', async () => {
    const path = '/a'.repeat(DEFAULT_LIMITS.maxJsonDepth);
    const res = await post(
      '/v1/streams/paths/checkpoints',
      JSON.stringify({ baseDigest: EMPTY_STATE_DIGEST_V2, ops: [{ op: 'set', path, value: {} }] }),
    );
    expect(res.status).toBe(400);
    expect((await readJson<ProblemBody>(res)).detail).toContain('path included');
    const shallow = await post(
      '/v1/streams/paths/checkpoints',
      JSON.stringify({
        baseDigest: EMPTY_STATE_DIGEST_V2,
        ops: [{ op: 'set', path: '/a', value: {} }],
      }),
    );
    expect(shallow.status).toBe(201);
  });

  it('takes its limit from the settings', async () => {
    const strict = createHarness(factory, { limits: { maxJsonDepth: 8 } });
    try {
      const body = (d: number) => `{"events":[{"type":"o","payload":${deepText(d)}}]}`;
      const ok = await strict.request('/v1/streams/s/events', { key: ROOT_KEY, body: body(5) });
      const no = await strict.request('/v1/streams/s/events', { key: ROOT_KEY, body: body(6) });
      expect([ok.status, no.status]).toEqual([201, 400]);
    } finally {
      strict.close();
    }
  });

  it('reads an event stored 5,000 deep by an older version (200, the stored bytes as they are)', async () => {
    // Written through the service, as the API did before the limit: the stored form is the same.
    await h.ledger.appender.append({
      tenant: 'default',
      stream: 'old-deep',
      events: [
        { type: 'observation', payload: { turn: 1 } },
        { type: 'observation', payload: olderDeepValue(DEEP) as never },
        { type: 'observation', payload: { turn: 3 } },
      ],
    });
    await h.ledger.appender.append({
      tenant: 'default',
      stream: 'old-deep',
      events: [{ type: 'note', payload: 'after' }],
    });

    const res = await h.request('/v1/streams/old-deep/events', { key: ROOT_KEY });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    expect(text).toContain(deepText(DEEP));
    const page = JSON.parse(text) as { events: LedgerEvent[]; next: number | null };
    expect(page.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(page.next).toBeNull();
    expect(page.events[0]).toEqual({
      seq: 1,
      ts: page.events[0]?.ts,
      type: 'observation',
      payload: { turn: 1 },
      prevHash: genesisHash('default', 'old-deep'),
      hash: page.events[0]?.hash,
    });
    // A client still verifies what it was given, deep payload included (with a canonicalizer
    // that handles the depth, as the older version's did: 4.0.0 recurses, see above).
    olderCanonical.set(page.events[1]?.payload as object, deepText(DEEP));
    const verified = verifyEvents(page.events, {
      seq: 0,
      hash: genesisHash('default', 'old-deep'),
    });
    expect(verified).toMatchObject({ ok: true, seq: 4 });
    const filtered = await h.request('/v1/streams/old-deep/events?type=note', { key: ROOT_KEY });
    expect(filtered.status).toBe(200);
    const verify = await h.request('/v1/streams/old-deep/verify', { key: ROOT_KEY });
    expect(await verify.json()).toMatchObject({ ok: true, seq: 4 });
  });
});
