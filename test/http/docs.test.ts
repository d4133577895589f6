import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from './harness.js';

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> };
}

describe.each(STORE_FACTORIES)('docs, health and logs on $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  describe('GET /v1/openapi.json', () => {
    const load = async () => (await (await h.request('/v1/openapi.json')).json()) as OpenApiDoc;

    it('is an OpenAPI 3.1 document with the bearer scheme and the problem schema', async () => {
      const doc = await load();

      expect(doc.openapi).toBe('3.1.0');
      expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
        type: 'http',
        scheme: 'bearer',
      });
      expect(doc.components.schemas.Problem).toBeDefined();
      const append = doc.paths['/v1/streams/{streamId}/events']?.post;
      expect(Object.keys(append?.responses['409']?.content ?? {})).toEqual([
        'application/problem+json',
      ]);
    });

    it('lists every route the app serves', async () => {
      const doc = await load();
      const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
      );
      const served = h.app.routes
        .filter((r) => r.method !== 'ALL')
        .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);

      expect(new Set(documented)).toEqual(new Set(served));
      expect(documented).toEqual(
        expect.arrayContaining([
          'POST /v1/streams/{streamId}/events',
          'GET /v1/streams/{streamId}/events',
          'GET /v1/streams/{streamId}',
          'GET /v1/streams/{streamId}/verify',
          'POST /v1/keys',
          'DELETE /v1/keys/{id}',
          'GET /v1/openapi.json',
          'GET /docs',
          'GET /healthz',
        ]),
      );
    });
  });

  it('titles the document with the package version', async () => {
    const doc = (await (await h.request('/v1/openapi.json')).json()) as {
      info: { title: string; version: string };
    };
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(doc.info).toMatchObject({
      title: 'Hefesto: durable state for AI agents',
      version: pkg.version,
    });
  });

  it('serves /docs and /console with their own strict CSP, assets cached for a year', async () => {
    const docs = await h.request('/docs');
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(docs.headers.get('content-security-policy')).not.toContain('unsafe');
    const html = await docs.text();
    expect(html).not.toMatch(/https?:\/\//);
    const bundle = /\/docs\/assets\/(swagger-ui-bundle\.[0-9a-f]+\.js)/.exec(html)?.[1];
    const asset = await h.request(`/docs/assets/${bundle}`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-encoding')).toBe('gzip');
    const page = await h.request('/console');
    expect(page.headers.get('content-security-policy')).toContain(
      "require-trusted-types-for 'script'",
    );
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect((await h.request('/console/assets/..%2Fpackage.json')).status).toBe(400);
  });

  it('answers /healthz without a key', async () => {
    const res = await h.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  describe('request logs', () => {
    it('write one JSON line per request with the request fields', async () => {
      const key = await h.newKey('acme');
      h.logs.length = 0;

      await h.append(key, 'run-1', [{ type: 'a', payload: 1 }]);
      await h.request('/v1/streams/run-1', { key: 'hk_bad' });

      const lines = h.logs.map((l) => JSON.parse(l));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatchObject({
        tenant: 'acme',
        stream: 'run-1',
        route: '/v1/streams/:streamId/events',
        method: 'POST',
        status: 201,
        latencyMs: expect.any(Number),
        requestId: expect.any(String),
      });
      expect(lines[0].code).toBeUndefined();
      expect(lines[1]).toMatchObject({ status: 401, code: 'ErrUnauthorized', stream: 'run-1' });
      expect(lines[1].tenant).toBeUndefined();
    });

    it('never contain keys, Authorization headers or payloads', async () => {
      const key = await h.newKey('acme');
      const created = await h.request('/v1/keys', {
        key: ROOT_KEY,
        body: { tenant: 'acme', scopes: ['read'] },
      });
      const newKey = ((await created.json()) as { key: string }).key;
      const payload = { secret: 'PAYLOAD-MARKER-7f3a' };

      await h.append(key, 'run-1', [{ type: 'a', payload }], { idempotencyKey: 'idem-1' });
      await h.append(key, 'run-1', [{ type: 'a', payload }], { idempotencyKey: 'idem-1' });
      await h.append(key, 'run-1', [{ type: 'a', payload: { ...payload, more: 1 } }], {
        idempotencyKey: 'idem-1',
      });
      await h.request('/v1/streams/run-1/events', { key });
      await h.request('/v1/streams/run-1/events', { key: `${key}x` });

      const text = h.logs.join('');
      expect(h.logs.length).toBeGreaterThanOrEqual(7);
      for (const secret of [key, newKey, ROOT_KEY, 'PAYLOAD-MARKER', 'Bearer', 'authorization']) {
        expect(text).not.toContain(secret);
      }
      for (const k of [key, newKey]) expect(text).not.toContain(k.slice(-43));
    });
  });
});
