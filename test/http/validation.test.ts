import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

const LIMITS = { maxEvents: 3, maxPayloadBytes: 64, maxBodyBytes: 1024 };

describe.each(STORE_FACTORIES)('input validation on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  beforeEach(async () => {
    h = createHarness(factory, { limits: LIMITS });
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  /** Bad input writes nothing: the stream does not exist afterwards. */
  const expectNothingWritten = async (stream = 'run-1') => {
    expect(await h.headSeq(key, stream)).toBeUndefined();
    expect((await h.objects.list('')).items).toEqual([]);
  };

  describe('ids', () => {
    it.each([
      ['a leading dot', '.run'],
      ['a # (encoded)', 'run%23x'],
      ['a slash (encoded)', 'a%2Fb'],
      ['a space', 'run%201'],
      ['129 characters', 'r'.repeat(129)],
    ])('refuses a stream id with %s (400)', async (_, stream) => {
      const res = await h.append(key, stream, events(1));

      expect(res.status).toBe(400);
      const problem = await readJson<ProblemBody>(res);
      expect(problem).toMatchObject({ code: 'ErrInvalidInput' });
      expect(problem.issues[0]).toMatchObject({ in: 'path', path: 'streamId' });
      expect((await h.objects.list('')).items).toEqual([]);
    });

    it('accepts a stream id of 128 characters with . _ : -', async () => {
      const stream = `a.b_c:d-${'e'.repeat(120)}`;
      expect((await h.append(key, stream, events(1))).status).toBe(201);
    });

    it.each([['-lead'], ['has space'], ['t'.repeat(129)], ['']])(
      'refuses the event type %j (400)',
      async (type) => {
        const res = await h.append(key, 'run-1', [{ type, payload: 1 }]);
        expect(res.status).toBe(400);
        await expectNothingWritten();
      },
    );

    it('accepts an event type with / and :', async () => {
      expect((await h.append(key, 'run-1', [{ type: 'tool/call:v2', payload: 1 }])).status).toBe(
        201,
      );
    });
  });

  describe('bodies', () => {
    it.each([
      ['no events', { events: [] }],
      ['an event without payload', { events: [{ type: 'a' }] }],
      ['an unknown field (a typo of expectedSeq)', { events: events(1), expectedseq: 0 }],
      ['a negative expectedSeq', { events: events(1), expectedSeq: -1 }],
      ['a fractional expectedSeq', { events: events(1), expectedSeq: 0.5 }],
      ['events that are not a list', { events: { type: 'a', payload: 1 } }],
      ['a JSON array', [1, 2]],
    ])('refuses %s (400)', async (_, body) => {
      const res = await h.request('/v1/streams/run-1/events', { key, body });

      expect(res.status).toBe(400);
      const problem = await readJson<ProblemBody>(res);
      expect(problem.code).toBe('ErrInvalidInput');
      expect(problem.issues.length).toBeGreaterThan(0);
      await expectNothingWritten();
    });

    it('refuses malformed JSON (400)', async () => {
      const res = await h.request('/v1/streams/run-1/events', { key, body: '{"events": [' });

      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'ErrInvalidInput' });
      await expectNothingWritten();
    });

    it.each([
      ['text/plain', { 'content-type': 'text/plain' }],
      [
        'application/x-www-form-urlencoded',
        { 'content-type': 'application/x-www-form-urlencoded' },
      ],
      ['application/merge-patch+json', { 'content-type': 'application/merge-patch+json' }],
    ])('refuses Content-Type %s (415)', async (_, headers) => {
      const res = await h.request('/v1/streams/run-1/events', {
        key,
        headers,
        body: { events: events(1) },
      });

      expect(res.status).toBe(415);
      expect(await res.json()).toMatchObject({ code: 'ErrUnsupportedMediaType' });
      await expectNothingWritten();
    });

    it('refuses a body without Content-Type (415)', async () => {
      const res = await h.app.request('/v1/streams/run-1/events', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: new TextEncoder().encode(JSON.stringify({ events: events(1) })),
      });
      expect(res.status).toBe(415);
    });

    it('accepts application/json with a charset', async () => {
      const res = await h.request('/v1/streams/run-1/events', {
        key,
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: { events: events(1) },
      });
      expect(res.status).toBe(201);
    });
  });

  describe('limits', () => {
    it('refuses more events than the batch limit (413)', async () => {
      const res = await h.append(key, 'run-1', events(LIMITS.maxEvents + 1));

      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ code: 'ErrPayloadTooLarge', status: 413 });
      await expectNothingWritten();
    });

    it('refuses a payload over the limit in canonical JSON bytes (413)', async () => {
      const payload = { text: 'x'.repeat(LIMITS.maxPayloadBytes) };

      const res = await h.append(key, 'run-1', [
        { type: 'a', payload: 1 },
        { type: 'a', payload },
      ]);

      expect(res.status).toBe(413);
      expect((await readJson<ProblemBody>(res)).detail).toContain('events[1].payload');
      await expectNothingWritten();
    });

    it('measures a payload canonically: whitespace in the request does not count', async () => {
      const payload = `{"b": 1,${' '.repeat(200)}"a": "${'y'.repeat(40)}"}`;
      const body = `{"events": [{"type": "a", "payload": ${payload}}]}`;
      expect(body.length).toBeGreaterThan(LIMITS.maxPayloadBytes);

      const res = await h.request('/v1/streams/run-1/events', { key, body });

      expect(res.status).toBe(201);
    });

    it('refuses a streamed body over the body limit (413)', async () => {
      const body = JSON.stringify({ events: events(1), pad: 'z'.repeat(LIMITS.maxBodyBytes) });

      const res = await h.request('/v1/streams/run-1/events', { key, body });

      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ code: 'ErrPayloadTooLarge' });
      await expectNothingWritten();
    });

    it('refuses a declared Content-Length over the body limit before reading it (413)', async () => {
      const body = JSON.stringify({ events: events(1), pad: 'z'.repeat(LIMITS.maxBodyBytes) });

      const res = await h.request('/v1/streams/run-1/events', {
        key,
        body,
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      });

      expect(res.status).toBe(413);
      await expectNothingWritten();
    });
  });

  describe('problem documents', () => {
    it('are application/problem+json with type, title, status, detail, code and instance', async () => {
      const res = await h.request('/v1/streams/nope', { key });

      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toEqual({
        type: 'urn:hefesto:problem:ErrStreamNotFound',
        title: 'Stream not found',
        status: 404,
        detail: 'stream nope not found',
        code: 'ErrStreamNotFound',
        instance: '/v1/streams/nope',
        requestId: res.headers.get('x-request-id'),
      });
    });

    it('answers an unknown route with 404 ErrNotFound', async () => {
      const res = await h.request('/v1/nothing-here', { key });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'ErrNotFound' });
    });

    it('answers an unexpected failure with 500 ErrInternal without its message', async () => {
      h.close();
      h = createHarness(factory, {
        wrapObjects: (objects): ObjectStore => ({
          ...bind(objects),
          putIfAbsent: () => Promise.reject(new Error('disk /secret/path exploded')),
        }),
      });
      key = await h.newKey('acme');

      const res = await h.append(key, 'run-1', events(1));

      expect(res.status).toBe(500);
      const text = await res.text();
      expect(JSON.parse(text)).toMatchObject({ code: 'ErrInternal', status: 500 });
      expect(text).not.toContain('secret');
      // Operators still see it, in the request's log line.
      expect(h.logs.join('')).toContain('disk /secret/path exploded');
    });
  });
});

const bind = (store: ObjectStore): ObjectStore => ({
  get: (key) => store.get(key),
  head: (key) => store.head(key),
  list: (prefix, options) => store.list(prefix, options),
  putIfAbsent: (key, body) => store.putIfAbsent(key, body),
  putIfMatch: (key, body, etag) => store.putIfMatch(key, body, etag),
  delete: (key) => store.delete(key),
});
