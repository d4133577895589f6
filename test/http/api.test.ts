import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { genesisHash, type LedgerEvent } from '../../shared/domain/event.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import {
  createHarness,
  events,
  type Harness,
  readJson as read,
  STORE_FACTORIES,
  T0,
} from './harness.js';

interface Appended {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
}
interface Page {
  events: LedgerEvent[];
  next: number | null;
}

describe.each(STORE_FACTORIES)('streams API on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  describe('POST /v1/streams/{streamId}/events', () => {
    it('appends a batch and answers 201 with the new head', async () => {
      const res = await h.append(key, 'run-1', events(3));

      expect(res.status).toBe(201);
      const body = await read<Appended>(res);
      expect(body).toMatchObject({ firstSeq: 1, lastSeq: 3, head: { seq: 3 } });
      expect(body.head.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    });

    it('appends when expectedSeq is the head, and refuses a stale one with 409', async () => {
      await h.append(key, 'run-1', events(2), { expectedSeq: 0 });
      expect((await h.append(key, 'run-1', events(1), { expectedSeq: 2 })).status).toBe(201);

      const stale = await h.append(key, 'run-1', events(1), { expectedSeq: 2 });

      expect(stale.status).toBe(409);
      expect(await stale.json()).toMatchObject({ code: 'ErrSeqConflict', currentSeq: 3 });
      expect(await h.headSeq(key, 'run-1')).toBe(3);
    });

    it('replays a retry with the same Idempotency-Key and body without appending again', async () => {
      const first = await h.append(key, 'run-1', events(2), { idempotencyKey: 'req-1' });
      await h.append(key, 'run-1', events(1));

      // Same body, other whitespace and key order: still the same request.
      const retry = await h.request('/v1/streams/run-1/events', {
        key,
        headers: { 'idempotency-key': '"req-1"' },
        body: `{ "events": [ {"payload": {"text": "said 0", "turn": 0}, "type": "observation"},
                 {"type": "observation", "payload": {"turn": 1, "text": "said 1"}} ] }`,
      });

      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(await retry.json()).toEqual(await first.json());
      expect(await h.headSeq(key, 'run-1')).toBe(3);
    });

    it('refuses the same Idempotency-Key with another body (422); on another stream it is another request', async () => {
      await h.append(key, 'run-1', events(2), { idempotencyKey: 'req-1' });

      const otherBody = await h.append(key, 'run-1', events(3), { idempotencyKey: 'req-1' });
      const otherStream = await h.append(key, 'run-2', events(2), { idempotencyKey: 'req-1' });

      expect(otherBody.status).toBe(422);
      expect(await otherBody.json()).toMatchObject({ code: 'ErrIdempotencyKeyReused' });
      expect(otherStream.status).toBe(201);
      expect(otherStream.headers.get('idempotent-replayed')).toBeNull();
      expect(await h.headSeq(key, 'run-1')).toBe(2);
      expect(await h.headSeq(key, 'run-2')).toBe(2);
    });

    it.each([
      ['an empty sf-string', '""'],
      ['an unterminated sf-string', '"abc'],
      ['a bare value with a space', 'a b'],
      ['a bare value with a comma', 'a,b'],
      ['a bad escape', '"a\\nb"'],
      ['256 characters', 'k'.repeat(256)],
    ])('refuses an Idempotency-Key that is %s (400)', async (_, value) => {
      const res = await h.append(key, 'run-1', events(1), { idempotencyKey: value });

      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'ErrInvalidInput' });
      expect(await h.headSeq(key, 'run-1')).toBeUndefined();
    });

    it('accepts 255 printable characters, quoted with escapes', async () => {
      const value = `"${'k'.repeat(250)} \\"\\\\x"`;
      const res = await h.append(key, 'run-1', events(1), { idempotencyKey: value });
      expect(res.status).toBe(201);
    });
  });

  describe('an append whose writer died mid-way', () => {
    it('is in progress (409, Retry-After) for a while, then its retry gets the result', async () => {
      let crashes = 1;
      h.close();
      h = createHarness(factory, {
        ledger: {
          crash: (step) => {
            if (step === 'segment-written' && crashes-- > 0) throw new Error('process died');
          },
        },
      });
      key = await h.newKey('acme');

      const died = await h.append(key, 'run-1', events(2), { idempotencyKey: 'req-1' });
      // 0.5 s later its orphan segment may still be about to commit: 2000 - 500 ms to wait.
      h.advance(500);
      const early = await h.append(key, 'run-1', events(2), { idempotencyKey: 'req-1' });
      h.advance(2_000);
      const later = await h.append(key, 'run-1', events(2), { idempotencyKey: 'req-1' });

      expect(died.status).toBe(500);
      expect(early.status).toBe(409);
      expect(early.headers.get('retry-after')).toBe('2');
      expect(await early.json()).toMatchObject({ code: 'ErrIdempotencyInProgress' });
      expect(later.status).toBe(201);
      expect(later.headers.get('idempotent-replayed')).toBe('true');
      expect(await later.json()).toMatchObject({ firstSeq: 1, lastSeq: 2 });
      expect(await h.headSeq(key, 'run-1')).toBe(2);
    });
  });

  describe('GET /v1/streams/{streamId}', () => {
    it('answers the head with ISO 8601 times', async () => {
      const appended = await read<Appended>(h.append(key, 'run-1', events(2)));
      h.advance(1_000);
      await h.append(key, 'run-1', events(1));

      const res = await h.request('/v1/streams/run-1', { key });

      expect(res.status).toBe(200);
      const body = await read<{ hash: string }>(res);
      expect(body).toMatchObject({
        streamId: 'run-1',
        seq: 3,
        createdAt: new Date(T0).toISOString(),
        updatedAt: new Date(T0 + 1_000).toISOString(),
      });
      expect(body.hash).not.toBe(appended.head.hash);
    });

    it('answers 404 ErrStreamNotFound for an unknown stream', async () => {
      const res = await h.request('/v1/streams/nope', { key });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'ErrStreamNotFound', status: 404 });
    });
  });

  describe('GET /v1/streams/{streamId}/events', () => {
    beforeEach(async () => {
      await h.append(key, 'run-1', [
        { type: 'a', payload: { n: 1 } },
        { type: 'b', payload: { n: 2 } },
      ]);
      h.advance(5);
      await h.append(key, 'run-1', [
        { type: 'a', payload: { n: 3 } },
        { type: 'b', payload: [4] },
        { type: 'a', payload: 'five' },
      ]);
    });

    it('returns every event, verifiable by a client from the genesis hash', async () => {
      const res = await h.request('/v1/streams/run-1/events', { key });

      expect(res.status).toBe(200);
      const body = await read<Page>(res);
      expect(body.next).toBeNull();
      expect(body.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(body.events.map((e) => e.ts)).toEqual([T0, T0, T0 + 5, T0 + 5, T0 + 5]);
      expect(body.events[3]).toMatchObject({ type: 'b', payload: [4] });
      const verdict = verifyEvents(body.events, { seq: 0, hash: genesisHash('acme', 'run-1') });
      expect(verdict.ok).toBe(true);
    });

    it('pages with from, limit and next', async () => {
      const first = await read<Page>(h.request('/v1/streams/run-1/events?from=2&limit=2', { key }));
      const rest = await read<Page>(
        h.request(`/v1/streams/run-1/events?from=${first.next}&limit=2`, { key }),
      );

      expect(first.events.map((e) => e.seq)).toEqual([2, 3]);
      expect(first.next).toBe(4);
      expect(rest.events.map((e) => e.seq)).toEqual([4, 5]);
      expect(rest.next).toBeNull();
    });

    it('filters by type', async () => {
      const res = await h.request('/v1/streams/run-1/events?type=a', { key });
      const body = await read<Page>(res);
      expect(body.events.map((e) => e.seq)).toEqual([1, 3, 5]);
    });

    it('answers an empty page past the head', async () => {
      const body = await (await h.request('/v1/streams/run-1/events?from=9', { key })).json();
      expect(body).toEqual({ events: [], next: null });
    });

    it.each(['limit=0', 'limit=1001', 'limit=x', 'from=0', 'from=-1', 'type=a%20b'])(
      'refuses the query %s (400)',
      async (query) => {
        const res = await h.request(`/v1/streams/run-1/events?${query}`, { key });
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: 'ErrInvalidInput' });
      },
    );

    it('answers 404 for an unknown stream', async () => {
      const res = await h.request('/v1/streams/nope/events', { key });
      expect(res.status).toBe(404);
    });
  });

  describe('GET /v1/streams/{streamId}/verify', () => {
    it('answers ok with the head', async () => {
      const appended = await read<Appended>(h.append(key, 'run-1', events(4)));

      const res = await h.request('/v1/streams/run-1/verify', { key });

      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, seq: 4, hash: appended.head.hash });
    });

    it('reports tampering, and reads of tampered data fail closed (500 ErrTamperedLedger)', async () => {
      await h.append(key, 'run-1', [{ type: 'note', payload: { text: 'hello' } }]);
      await h.append(key, 'run-1', [{ type: 'note', payload: { text: 'world' } }]);
      const [segment] = (await h.objects.list('')).items.filter((o) => o.key.endsWith('1'));
      const stored = segment && (await h.objects.get(segment.key));
      if (!segment || !stored) throw new Error('no segment stored');
      const text = Buffer.from(stored.body).toString('latin1');
      const forged = Buffer.from(text.replace('hello', 'jello'), 'latin1');
      await h.objects.putIfMatch(segment.key, forged, stored.etag);

      const verify = await h.request('/v1/streams/run-1/verify', { key });
      const read = await h.request('/v1/streams/run-1/events', { key });

      expect(verify.status).toBe(200);
      expect(await verify.json()).toEqual({
        ok: false,
        code: 'ErrTamperedLedger',
        firstBadSeq: 1,
        object: 'segment',
        seq: 1,
      });
      expect(read.status).toBe(500);
      expect(read.headers.get('content-type')).toBe('application/problem+json');
      const problem = await read.json();
      expect(problem).toMatchObject({ code: 'ErrTamperedLedger', firstBadSeq: 1 });
      expect(JSON.stringify(problem)).not.toContain('hello');
    });

    it('answers 404 for an unknown stream', async () => {
      expect((await h.request('/v1/streams/nope/verify', { key })).status).toBe(404);
    });
  });
});
