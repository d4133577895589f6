import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createHarness,
  events,
  type Harness,
  ROOT_KEY,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

describe.each(STORE_FACTORIES)('auth on $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  describe('authentication', () => {
    it.each([
      ['no Authorization header', {}],
      ['another scheme', { authorization: `Basic ${ROOT_KEY}` }],
      ['an unknown key', { authorization: `Bearer hk_0123456789abcdef_${'A'.repeat(43)}` }],
      ['a malformed key', { authorization: 'Bearer not-a-key' }],
    ])('refuses %s with 401 ErrUnauthorized', async (_, headers) => {
      const res = await h.request('/v1/streams/run-1', { headers });

      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.json()).toMatchObject({ code: 'ErrUnauthorized', status: 401 });
    });

    it('refuses a real key id with a wrong secret', async () => {
      const key = await h.newKey('acme');
      const forged = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;

      const res = await h.request('/v1/streams/run-1', { key: forged });

      expect(res.status).toBe(401);
    });

    it('checks the key before looking at the body', async () => {
      const res = await h.request('/v1/streams/run-1/events', {
        body: 'x'.repeat(10),
        headers: { 'content-type': 'text/plain' },
      });
      expect(res.status).toBe(401);
    });
  });

  describe('scopes', () => {
    it('refuses an append by a read-only key with 403 ErrForbidden', async () => {
      const reader = await h.newKey('acme', ['read']);

      const res = await h.append(reader, 'run-1', events(1));

      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'ErrForbidden' });
      expect(await h.headSeq(ROOT_KEY, 'run-1')).toBeUndefined();
    });

    it('refuses reads by a write-only key with 403', async () => {
      const writer = await h.newKey('acme', ['write']);
      expect((await h.append(writer, 'run-1', events(1))).status).toBe(201);

      for (const path of ['', '/events', '/verify']) {
        expect((await h.request(`/v1/streams/run-1${path}`, { key: writer })).status).toBe(403);
      }
    });

    it('refuses key management without the admin scope', async () => {
      const key = await h.newKey('acme', ['read', 'write']);

      const res = await h.request('/v1/keys', { key, body: { scopes: ['read'] } });

      expect(res.status).toBe(403);
    });
  });

  describe('tenant isolation', () => {
    it("never lets a tenant see or touch another tenant's stream of the same id", async () => {
      const a = await h.newKey('tenant-a');
      const b = await h.newKey('tenant-b');
      const secret = [{ type: 'note', payload: { owner: 'a' } }];
      await h.append(a, 'shared-run', secret, { idempotencyKey: 'same-key' });

      const head = await h.request('/v1/streams/shared-run', { key: b });
      const read = await h.request('/v1/streams/shared-run/events', { key: b });
      const verify = await h.request('/v1/streams/shared-run/verify', { key: b });
      const stale = await h.append(b, 'shared-run', events(1), { expectedSeq: 1 });
      // The same Idempotency-Key and body in tenant B is B's own request, not a replay of A's.
      const own = await h.append(b, 'shared-run', secret, { idempotencyKey: 'same-key' });

      expect([head.status, read.status, verify.status]).toEqual([404, 404, 404]);
      expect(await stale.json()).toMatchObject({ code: 'ErrSeqConflict', currentSeq: 0 });
      expect(own.status).toBe(201);
      expect(own.headers.get('idempotent-replayed')).toBeNull();
      expect(await own.json()).toMatchObject({ firstSeq: 1, lastSeq: 1 });
      type Page = { events: Array<{ hash: string }> };
      const aEvents = await readJson<Page>(h.request('/v1/streams/shared-run/events', { key: a }));
      const bEvents = await readJson<Page>(h.request('/v1/streams/shared-run/events', { key: b }));
      expect(aEvents.events).toHaveLength(1);
      expect(bEvents.events).toHaveLength(1);
      expect(aEvents.events[0]?.hash).not.toBe(bEvents.events[0]?.hash);
    });

    it('ignores any tenant a request names: the tenant is the key', async () => {
      const b = await h.newKey('tenant-b');
      await h.append(ROOT_KEY, 'run-1', events(1));

      const res = await h.request('/v1/streams/run-1?tenant=default', {
        key: b,
        headers: { 'x-tenant': 'default' },
      });

      expect(res.status).toBe(404);
    });
  });

  describe('POST /v1/keys', () => {
    it('lets the root key create a key for any tenant', async () => {
      const res = await h.request('/v1/keys', {
        key: ROOT_KEY,
        body: { tenant: 'acme', scopes: ['write', 'read', 'read'] },
      });

      expect(res.status).toBe(201);
      const body = await readJson<{ id: string; key: string }>(res);
      expect(body).toMatchObject({ tenant: 'acme', scopes: ['read', 'write'] });
      expect(body.key).toMatch(new RegExp(`^hk_${body.id}_[A-Za-z0-9_-]{43}$`));
      expect((await h.append(body.key, 'run-1', events(1))).status).toBe(201);
    });

    it('stores only a hash of the key', async () => {
      const body = await readJson<{ id: string; key: string }>(
        h.request('/v1/keys', { key: ROOT_KEY, body: { tenant: 'acme', scopes: ['read'] } }),
      );

      const stored = await h.records.get({ pk: `key#${body.id}`, sk: 'key' });

      expect(stored).toBeDefined();
      expect(JSON.stringify(stored)).not.toContain(body.key.slice(-43));
    });

    it('lets a tenant admin create keys for its own tenant only', async () => {
      const admin = await h.newKey('acme', ['admin']);

      const own = await h.request('/v1/keys', { key: admin, body: { scopes: ['read'] } });
      const named = await h.request('/v1/keys', {
        key: admin,
        body: { tenant: 'acme', scopes: ['read'] },
      });
      const other = await h.request('/v1/keys', {
        key: admin,
        body: { tenant: 'globex', scopes: ['read'] },
      });

      expect(own.status).toBe(201);
      expect(await own.json()).toMatchObject({ tenant: 'acme' });
      expect(named.status).toBe(201);
      expect(other.status).toBe(403);
      expect(await other.json()).toMatchObject({ code: 'ErrForbidden' });
    });

    it.each([
      ['a bad tenant id', { tenant: '-acme', scopes: ['read'] }],
      ['a tenant id with #', { tenant: 'a#b', scopes: ['read'] }],
      ['no scopes', { tenant: 'acme', scopes: [] }],
      ['an unknown scope', { tenant: 'acme', scopes: ['root'] }],
    ])('refuses %s (400)', async (_, body) => {
      const res = await h.request('/v1/keys', { key: ROOT_KEY, body });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'ErrInvalidInput' });
    });
  });

  describe('DELETE /v1/keys/{id}', () => {
    const create = async (by: string, tenant: string) =>
      (await (
        await h.request('/v1/keys', { key: by, body: { tenant, scopes: ['read', 'write'] } })
      ).json()) as { id: string; key: string };

    it('revokes a key: 204, then the key is refused with 401', async () => {
      const victim = await create(ROOT_KEY, 'acme');
      expect((await h.headSeq(victim.key, 'run-1')) ?? 'no stream').toBe('no stream');

      const res = await h.request(`/v1/keys/${victim.id}`, { method: 'DELETE', key: ROOT_KEY });
      const again = await h.request(`/v1/keys/${victim.id}`, { method: 'DELETE', key: ROOT_KEY });

      expect(res.status).toBe(204);
      expect(again.status).toBe(204);
      expect((await h.request('/v1/streams/run-1', { key: victim.key })).status).toBe(401);
    });

    it("answers 404 for an unknown key and for another tenant's key", async () => {
      const admin = await h.newKey('acme', ['admin']);
      const foreign = await create(ROOT_KEY, 'globex');

      const unknown = await h.request('/v1/keys/0123456789abcdef', {
        method: 'DELETE',
        key: ROOT_KEY,
      });
      const other = await h.request(`/v1/keys/${foreign.id}`, { method: 'DELETE', key: admin });

      expect(unknown.status).toBe(404);
      expect(other.status).toBe(404);
      expect((await h.append(foreign.key, 'run-1', events(1))).status).toBe(201);
    });
  });

  describe('the bootstrap key', () => {
    it('is created once per store, with every scope for tenant default', async () => {
      const first = await h.keys.ensureBootstrapKey();
      const second = await h.keys.ensureBootstrapKey();

      expect(first).toMatchObject({ tenant: 'default', scopes: ['read', 'write', 'admin'] });
      expect(second).toBeUndefined();
      const key = first?.key ?? '';
      expect((await h.append(key, 'run-1', events(1))).status).toBe(201);
      expect(await h.headSeq(ROOT_KEY, 'run-1')).toBe(1);
    });
  });
});
