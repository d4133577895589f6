import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Compactor } from '../../shared/compaction/compactor.js';
import { counterIds } from '../support/compaction.js';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

interface Retention {
  streamId: string;
  expiresAt: string | null;
  pruneAfterSeconds: number | null;
  prunedSeq: number | null;
  prunedHash: string | null;
}

const GRACE = 60_000;

describe.each(STORE_FACTORIES)('retention API on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  let admin: string;
  const compactor = () =>
    new Compactor({
      objects: h.objects,
      records: h.records,
      clock: { now: h.now },
      ids: counterIds('c'),
      states: h.ledger.states,
      graceMs: GRACE,
    });
  /** Compaction runs until nothing is due, the clock moving past every grace period. */
  const compactFully = async () => {
    for (let i = 0; i < 6; i++) {
      await compactor().run();
      h.advance(GRACE * 2);
    }
  };
  const putRetention = (stream: string, body: unknown, as = admin) =>
    h.request(`/v1/streams/${stream}/retention`, { method: 'PUT', key: as, body });

  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
    admin = await h.newKey('acme', ['read', 'write', 'admin']);
  });
  afterEach(() => h.close());

  describe('PUT and GET /v1/streams/{streamId}/retention', () => {
    it('sets, reads and clears the TTL and the pruning horizon', async () => {
      await h.append(key, 'run-1', events(2));
      const none = await read<Retention>(h.request('/v1/streams/run-1/retention', { key }));
      expect(none).toEqual({
        streamId: 'run-1',
        expiresAt: null,
        pruneAfterSeconds: null,
        prunedSeq: null,
        prunedHash: null,
      });

      const set = await putRetention('run-1', { ttlSeconds: 3600, pruneAfterSeconds: 600 });
      expect(set.status).toBe(200);
      const expected = {
        ...none,
        expiresAt: new Date(h.now() + 3_600_000).toISOString(),
        pruneAfterSeconds: 600,
      };
      expect(await set.json()).toEqual(expected);
      expect(await read(h.request('/v1/streams/run-1/retention', { key }))).toEqual(expected);

      const cleared = await read<Retention>(putRetention('run-1', { ttlSeconds: null }));
      expect(cleared).toEqual({ ...expected, expiresAt: null });
    });

    it('takes the TTL from the append that creates the stream', async () => {
      const res = await h.request('/v1/streams/run-1/events', {
        key,
        body: { events: events(1), ttlSeconds: 60 },
      });
      expect(res.status).toBe(201);
      const view = await read<Retention>(h.request('/v1/streams/run-1/retention', { key }));
      expect(view.expiresAt).toBe(new Date(h.now() + 60_000).toISOString());
    });

    it.each([
      ['an empty body', {}],
      ['a negative TTL', { ttlSeconds: -1 }],
      ['a fractional TTL', { ttlSeconds: 1.5 }],
      ['a zero horizon', { pruneAfterSeconds: 0 }],
      ['an unknown field', { ttlSeconds: 1, keep: true }],
    ])('refuses %s (400) and changes nothing', async (_, body) => {
      await h.append(key, 'run-1', events(1));
      const res = await putRetention('run-1', body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'ErrInvalidInput' });
      const view = await read<Retention>(h.request('/v1/streams/run-1/retention', { key }));
      expect(view.expiresAt).toBeNull();
    });

    it('answers 404 for an unknown stream or another tenant’s, 403 without the admin scope', async () => {
      await h.append(key, 'run-1', events(1));
      const other = await h.newKey('other', ['read', 'write', 'admin']);
      const reader = await h.newKey('acme', ['read']);
      expect((await putRetention('nope', { ttlSeconds: 1 })).status).toBe(404);
      expect((await putRetention('run-1', { ttlSeconds: 1 }, other)).status).toBe(404);
      expect((await h.request('/v1/streams/run-1/retention', { key: other })).status).toBe(404);
      const forbidden = await putRetention('run-1', { ttlSeconds: 1 }, reader);
      expect(forbidden.status).toBe(403);
      expect((await h.request('/v1/streams/run-1/retention', { key: reader })).status).toBe(200);
      expect((await h.request('/v1/streams/run-1/retention')).status).toBe(401);
    });

    it.each([
      ['deleting the stream now', { ttlSeconds: 0 }],
      ['a TTL', { ttlSeconds: 3600 }],
      ['pruning', { pruneAfterSeconds: 1 }],
      ['clearing both', { ttlSeconds: null, pruneAfterSeconds: null }],
    ])('refuses %s to a write-scope key (403 ErrForbidden), changing nothing', async (_, body) => {
      await h.append(key, 'run-1', events(3));
      const before = await read<Retention>(h.request('/v1/streams/run-1/retention', { key }));
      const res = await putRetention('run-1', body, key);
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'ErrForbidden' });
      expect(await read(h.request('/v1/streams/run-1/retention', { key }))).toEqual(before);
      await compactFully();
      expect(await h.headSeq(key, 'run-1')).toBe(3);
      expect((await h.request('/v1/streams/run-1/events', { key })).status).toBe(200);
    });

    it('documents the admin scope on PUT', async () => {
      const doc = await read<{ paths: Record<string, Record<string, { description?: string }>> }>(
        h.request('/v1/openapi.json'),
      );
      expect(doc.paths['/v1/streams/{streamId}/retention']?.put?.description).toMatch(/admin/);
    });

    it('is in the OpenAPI document', async () => {
      const doc = await read<{ paths: Record<string, object> }>(h.request('/v1/openapi.json'));
      expect(Object.keys(doc.paths['/v1/streams/{streamId}/retention'] ?? {}).sort()).toEqual([
        'get',
        'put',
      ]);
    });
  });

  describe('what the compactor does with it', () => {
    it('deletes an expired stream: 404 everywhere, then the id starts afresh', async () => {
      await h.append(key, 'run-1', events(3));
      await putRetention('run-1', { ttlSeconds: 60 });
      h.advance(61_000);
      await compactor().run();

      for (const path of ['', '/events', '/verify', '/state', '/retention']) {
        const res = await h.request(`/v1/streams/run-1${path}`, { key });
        expect(res.status, path).toBe(404);
        expect((await res.json()) as ProblemBody).toMatchObject({ code: 'ErrStreamNotFound' });
      }
      const refused = await h.append(key, 'run-1', events(1));
      expect(refused.status).toBe(404);

      await compactFully();
      const fresh = await h.append(key, 'run-1', events(1));
      expect(fresh.status).toBe(201);
      expect(await fresh.json()).toMatchObject({ firstSeq: 1, lastSeq: 1 });
    });

    it('prunes old events: 410 before the pruning point, verifiable after it', async () => {
      await h.append(key, 'run-1', events(3));
      await h.append(key, 'run-1', events(2));
      h.advance(120_000);
      await h.append(key, 'run-1', events(2));
      await putRetention('run-1', { pruneAfterSeconds: 60 });
      await compactor().run();

      const view = await read<Retention>(h.request('/v1/streams/run-1/retention', { key }));
      expect(view.prunedSeq).toBe(5);
      const pruned = await h.request('/v1/streams/run-1/events?from=2', { key });
      expect(pruned.status).toBe(410);
      expect(await pruned.json()).toMatchObject({ code: 'ErrPruned', prunedSeq: 5 });
      const rest = await read<{ events: Array<{ seq: number; prevHash: string }> }>(
        h.request('/v1/streams/run-1/events', { key }),
      );
      expect(rest.events.map((e) => e.seq)).toEqual([6, 7]);
      expect(rest.events[0]?.prevHash).toBe(view.prunedHash);
      expect(await read(h.request('/v1/streams/run-1/verify', { key }))).toMatchObject({
        ok: true,
        seq: 7,
      });
      expect((await h.request('/v1/streams/run-1/state?at=4', { key })).status).toBe(410);
      expect((await h.request('/v1/streams/run-1/state?at=5', { key })).status).toBe(200);
    });
  });
});
