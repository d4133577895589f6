import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from './harness.js';

/** What the app answers besides its routes: 405 with Allow on a known path, `GET /`. */

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A concrete path for a route pattern: every `:param` filled with a valid-looking id. */
const concrete = (pattern: string) => pattern.replace(/:(\w+)/g, (_, name) => `${name}-1`);

describe.each(STORE_FACTORIES)('routing on $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  /** Every registered route path with the methods it is registered under. */
  const served = () => {
    const byPath = new Map<string, Set<string>>();
    for (const r of h.app.routes.filter((r) => r.method !== 'ALL')) {
      const methods = byPath.get(r.path) ?? new Set<string>();
      methods.add(r.method);
      byPath.set(r.path, methods);
    }
    return byPath;
  };

  describe('a method a known path does not serve', () => {
    it('answers 405 with Allow listing what it serves, on every registered path', async () => {
      const paths = served();
      expect(paths.size).toBeGreaterThan(15);
      let checked = 0;
      for (const [pattern, methods] of paths) {
        const allow = new Set(methods);
        if (allow.has('GET')) allow.add('HEAD');
        for (const method of METHODS.filter((m) => !allow.has(m))) {
          const res = await h.request(concrete(pattern), { method, key: ROOT_KEY });

          expect(res.status, `${method} ${pattern}`).toBe(405);
          expect(res.headers.get('allow')?.split(', ').sort(), pattern).toEqual([...allow].sort());
          if (method === 'HEAD') continue;
          expect(res.headers.get('content-type')).toBe('application/problem+json');
          expect(await res.json()).toMatchObject({
            status: 405,
            code: 'ErrMethodNotAllowed',
            type: 'urn:hefesto:problem:ErrMethodNotAllowed',
          });
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(40);
    });

    it('says so without a key: which methods a path takes is in the public OpenAPI document', async () => {
      const res = await h.request('/v1/keys', { method: 'GET' });

      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });

    it('still answers 404 ErrNotFound for a path no route has', async () => {
      for (const path of ['/v1/nope', '/v1/streams/a/b/c/d/e', '/v2/streams/a']) {
        const res = await h.request(path, { method: 'GET', key: ROOT_KEY });

        expect(res.status, path).toBe(404);
        expect(res.headers.get('allow')).toBeNull();
        expect(await res.json()).toMatchObject({ code: 'ErrNotFound' });
      }
    });

    it('has no compaction route when the app has no compactor (the Lambda API)', async () => {
      const res = await h.request('/v1/admin/compact', { method: 'POST', key: ROOT_KEY });

      expect(res.status).toBe(404);
    });
  });

  describe('GET /', () => {
    it('points to the docs, the OpenAPI document and the console, which are there', async () => {
      const res = await h.request('/');

      expect(res.status).toBe(200);
      const index = (await res.json()) as Record<string, string>;
      expect(index).toEqual({
        name: 'hefesto',
        docs: '/docs',
        openapi: '/v1/openapi.json',
        console: '/console',
        health: '/healthz',
      });
      for (const link of [index.docs, index.openapi, index.console, index.health]) {
        expect((await h.request(link ?? '')).status, link).toBe(200);
      }
    });
  });
});
