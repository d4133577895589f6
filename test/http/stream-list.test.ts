import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
  T0,
} from './harness.js';

/** GET /v1/streams and GET /v1/streams/{id}/effects over HTTP: scopes, tenants, input. */

interface Listed {
  streams: Array<{ streamId: string; seq: number; updatedAt: string; lease: unknown }>;
  next: string | null;
}
interface Effects {
  effects: Array<{ effectKey: string; status: string; sagaId: string | null; holder?: unknown }>;
  next: string | null;
}

describe.each(STORE_FACTORIES)('listing routes on $name stores', (factory) => {
  let h: Harness;
  let acme: string;
  beforeEach(async () => {
    h = createHarness(factory);
    acme = await h.newKey('acme');
  });
  afterEach(() => h.close());

  describe('GET /v1/streams', () => {
    it("lists only the key's tenant's streams, by prefix and page", async () => {
      const globex = await h.newKey('globex');
      for (const id of ['run-1', 'run-2', 'run-3', 'job-1']) await h.append(acme, id, events(2));
      await h.append(globex, 'run-9', events(1));

      const first = await read<Listed>(h.request('/v1/streams?prefix=run-&limit=2', { key: acme }));
      const rest = await read<Listed>(
        h.request(`/v1/streams?prefix=run-&limit=2&after=${first.next}`, { key: acme }),
      );

      expect(first).toEqual({
        streams: [
          { streamId: 'run-1', seq: 2, updatedAt: new Date(T0).toISOString(), lease: null },
          { streamId: 'run-2', seq: 2, updatedAt: new Date(T0).toISOString(), lease: null },
        ],
        next: 'run-2',
      });
      expect(rest.streams.map((s) => s.streamId)).toEqual(['run-3']);
      expect(rest.next).toBeNull();
      const theirs = await read<Listed>(h.request('/v1/streams', { key: globex }));
      expect(theirs.streams.map((s) => s.streamId)).toEqual(['run-9']);
    });

    it('gives times as ISO 8601, as the head and the lease routes do', async () => {
      await h.append(acme, 'run-1', events(1));
      await h.request('/v1/streams/run-1/lease', {
        key: acme,
        body: { owner: 'worker-a', ttlMs: 5000 },
      });

      const page = await read<Listed>(h.request('/v1/streams', { key: acme }));
      const head = await read<{ updatedAt: string }>(h.request('/v1/streams/run-1', { key: acme }));
      const lease = await read<{ expiresAt: string }>(
        h.request('/v1/streams/run-1/lease', { key: acme }),
      );

      const [row] = page.streams;
      expect(row?.updatedAt).toBe(head.updatedAt);
      expect(row?.lease).toMatchObject({ expiresAt: lease.expiresAt });
    });

    it('shows a held lease with its epoch and expiry', async () => {
      await h.append(acme, 'run-1', events(1));
      await h.request('/v1/streams/run-1/lease', {
        key: acme,
        body: { owner: 'worker-a', ttlMs: 5000 },
      });

      const page = await read<Listed>(h.request('/v1/streams', { key: acme }));

      expect(page.streams[0]?.lease).toEqual({
        owner: 'worker-a',
        epoch: 1,
        draining: false,
        expiresAt: new Date(T0 + 5000).toISOString(),
      });
    });

    it('needs a key with the read scope', async () => {
      const writeOnly = await h.newKey('acme', ['write']);

      expect((await h.request('/v1/streams')).status).toBe(401);
      const res = await h.request('/v1/streams', { key: writeOnly });
      expect(res.status).toBe(403);
      expect((await read<ProblemBody>(res)).code).toBe('ErrForbidden');
    });

    it.each([
      ['prefix=a%23b', 'prefix'],
      [`prefix=${'a'.repeat(129)}`, 'prefix'],
      ['after=..', 'after'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
    ])('refuses %s with 400 naming %s', async (query, field) => {
      const res = await h.request(`/v1/streams?${query}`, { key: acme });

      expect(res.status).toBe(400);
      const body = await read<ProblemBody>(res);
      expect(body.code).toBe('ErrInvalidInput');
      expect(body.issues.map((i) => i.path)).toContain(field);
    });

    it('answers a page of 1000 when asked', async () => {
      const page = await h.request('/v1/streams?limit=1000', { key: acme });
      expect(page.status).toBe(200);
    });
  });

  describe('GET /v1/streams/{id}/effects', () => {
    const begin = (key: string, body: object) =>
      read<{ holder: string }>(
        h.request(`/v1/streams/run-1/effects/${key}/begin`, { key: acme, body }),
      );

    it('lists each effect with its status and saga, never its holder', async () => {
      await h.append(acme, 'run-1', events(1));
      const paid = await begin('pay-1', { kind: 'pay', intent: { eur: 5 }, sagaId: 'order-1' });
      await h.request('/v1/streams/run-1/effects/pay-1/complete', {
        key: acme,
        body: { holder: paid.holder, result: { ok: true } },
      });
      const shipped = await begin('ship-1', { kind: 'ship', intent: {}, sagaId: 'order-1' });
      await h.request('/v1/streams/run-1/effects/ship-1/fail', {
        key: acme,
        body: { holder: shipped.holder, error: { why: 'no stock' } },
      });
      await begin('mail-1', { kind: 'mail', intent: {}, leaseMs: 1000 });
      await begin('push-1', { kind: 'push', intent: {}, leaseMs: 60_000 });
      h.advance(2000);

      const page = await read<Effects>(h.request('/v1/streams/run-1/effects', { key: acme }));

      expect(page.effects.map((e) => [e.effectKey, e.status, e.sagaId])).toEqual([
        ['mail-1', 'unknown_outcome', null],
        ['pay-1', 'completed', 'order-1'],
        ['push-1', 'acquired', null],
        ['ship-1', 'failed', 'order-1'],
      ]);
      expect(JSON.stringify(page)).not.toContain(paid.holder);
      const second = await read<Effects>(
        h.request('/v1/streams/run-1/effects?limit=2&after=mail-1', { key: acme }),
      );
      expect(second.effects.map((e) => e.effectKey)).toEqual(['pay-1', 'push-1']);
      expect(second.next).toBe('push-1');
    });

    it("is 404 for a stream that does not exist, also another tenant's", async () => {
      const globex = await h.newKey('globex');
      await h.append(globex, 'run-1', events(1));

      const res = await h.request('/v1/streams/run-1/effects', { key: acme });

      expect(res.status).toBe(404);
    });
  });
});
