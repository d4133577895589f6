import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import { segmentKey } from '../../shared/chain/storage-keys.js';
import { Appender, type AppendRequest, type CommitStep } from '../../shared/commit/append.js';
import {
  CrashInjectedError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  SeqConflictError,
  StreamNotFoundError,
  TamperedLedgerError,
} from '../../shared/domain/errors.js';
import { type EventInput, genesisHash } from '../../shared/domain/event.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const S = 'run-1';

const manualClock = (start = Date.now()) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

const batch = (label: string, n = 1): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

const crashAt = (step: CommitStep) => (at: CommitStep) => {
  if (at === step) throw new CrashInjectedError(at);
};

describe.each(allStores.filter((f) => f.enabled))('ledger services on $name', (factory) => {
  let stores: StorePair;
  let clock: ReturnType<typeof manualClock>;
  let appender: Appender;
  let reader: Reader;
  const append = (req: Partial<AppendRequest> & Pick<AppendRequest, 'events'>) =>
    appender.append({ tenant: T, stream: S, ...req });
  const allEvents = async (tenant = T, stream = S) => {
    const page = await reader.readEvents(tenant, stream, { limit: 10_000 });
    return page.events;
  };

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    appender = new Appender({ ...stores, clock });
    reader = new Reader(stores);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  describe('append and read', () => {
    it('creates the stream on first append and chains every batch from genesis', async () => {
      const first = await append({ events: batch('a', 3) });
      const second = await append({ events: batch('b', 2) });
      expect(first.response).toMatchObject({ firstSeq: 1, lastSeq: 3 });
      expect(second.response).toMatchObject({ firstSeq: 4, lastSeq: 5 });
      const head = await reader.head(T, S);
      expect(head).toMatchObject({ seq: 5, hash: second.response.head.hash, epoch: 0 });
      const events = await allEvents();
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(events[3]?.payload).toEqual({ label: 'b', i: 0 });
      expect(verifyEvents(events, { seq: 0, hash: genesisHash(T, S) })).toEqual({
        ok: true,
        seq: 5,
        hash: head.hash,
      });
      expect(await reader.verify(T, S)).toEqual({ ok: true, seq: 5, hash: head.hash });
    });

    it('pages reads with from, limit and next, and filters by type', async () => {
      for (let i = 0; i < 6; i++) {
        await append({ events: [...batch(`o${i}`), { type: 'decision', payload: { i } }] });
      }
      const page = await reader.readEvents(T, S, { from: 3, limit: 4 });
      expect(page.events.map((e) => e.seq)).toEqual([3, 4, 5, 6]);
      expect(page.next).toBe(7);
      const rest = await reader.readEvents(T, S, { from: page.next, limit: 100 });
      expect(rest.events.map((e) => e.seq)).toEqual([7, 8, 9, 10, 11, 12]);
      expect(rest.next).toBeUndefined();
      const decisions = await reader.readEvents(T, S, { type: 'decision', limit: 100 });
      expect(decisions.events.map((e) => e.seq)).toEqual([2, 4, 6, 8, 10, 12]);
      expect(await reader.readEvents(T, S, { from: 99 })).toEqual({ events: [] });
    });

    it('answers StreamNotFound for an unknown stream', async () => {
      await expect(reader.head(T, 'nope')).rejects.toBeInstanceOf(StreamNotFoundError);
      await expect(reader.readEvents(T, 'nope')).rejects.toBeInstanceOf(StreamNotFoundError);
    });

    it('keeps tenants apart even with the same stream id', async () => {
      await append({ events: batch('a') });
      await appender.append({ tenant: 'other', stream: S, events: batch('z', 2) });
      expect((await reader.head(T, S)).seq).toBe(1);
      expect((await reader.head('other', S)).seq).toBe(2);
      expect((await allEvents('other'))[0]?.prevHash).toBe(genesisHash('other', S));
    });

    it('refuses a stale expectedSeq and writes nothing', async () => {
      await append({ events: batch('a'), expectedSeq: 0 });
      const err = await append({ events: batch('b'), expectedSeq: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SeqConflictError);
      expect((err as SeqConflictError).currentSeq).toBe(1);
      expect((await reader.head(T, S)).seq).toBe(1);
      expect(await stores.objects.head(segmentKey(T, S, 2))).toBeUndefined();
    });
  });

  describe('idempotency', () => {
    const idem = { key: 'req-1', digest: 'a'.repeat(64) };

    it('answers a retried request with the original result and appends nothing', async () => {
      const first = await append({ events: batch('a', 2), idempotency: idem });
      const again = await append({ events: batch('a', 2), idempotency: idem });
      expect(first.replayed).toBe(false);
      expect(again).toEqual({ response: first.response, replayed: true });
      expect((await reader.head(T, S)).seq).toBe(2);
    });

    it('refuses the same key with another request fingerprint', async () => {
      await append({ events: batch('a'), idempotency: idem });
      await expect(
        append({ events: batch('b'), idempotency: { ...idem, digest: 'b'.repeat(64) } }),
      ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    });

    it('scopes keys to their stream: the same key on another stream is another request', async () => {
      await append({ events: batch('a'), idempotency: idem });
      const other = await appender.append({
        tenant: T,
        stream: 'run-2',
        events: batch('b'),
        idempotency: idem,
      });
      expect(other.replayed).toBe(false);
      expect((await reader.head(T, 'run-2')).seq).toBe(1);
    });

    it('scopes keys to their tenant', async () => {
      await append({ events: batch('a'), idempotency: idem });
      const other = await appender.append({
        tenant: 'other',
        stream: S,
        events: batch('a'),
        idempotency: idem,
      });
      expect(other.replayed).toBe(false);
    });
  });

  describe('crash windows', () => {
    const idem = { key: 'crash-1', digest: 'c'.repeat(64) };
    const crashing = (step: CommitStep) => new Appender({ ...stores, clock, crash: crashAt(step) });

    it('dies after reading the head: nothing is written and the retry appends once', async () => {
      await expect(
        crashing('head-read').append({
          tenant: T,
          stream: S,
          events: batch('x'),
          idempotency: idem,
        }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      await expect(reader.head(T, S)).rejects.toBeInstanceOf(StreamNotFoundError);
      const retry = await append({ events: batch('x'), idempotency: idem });
      expect(retry).toMatchObject({ replayed: false, response: { firstSeq: 1, lastSeq: 1 } });
      expect((await allEvents()).length).toBe(1);
    });

    it('dies after writing the segment: the orphan stays invisible until rolled forward', async () => {
      await append({ events: batch('before') });
      await expect(
        crashing('segment-written').append({
          tenant: T,
          stream: S,
          events: batch('x', 2),
          idempotency: idem,
        }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      expect((await reader.head(T, S)).seq).toBe(1);
      expect((await allEvents()).map((e) => e.seq)).toEqual([1]);
      expect(await reader.verify(T, S)).toMatchObject({ ok: true, seq: 1 });

      // The retry within the writer's grace window is told to come back later...
      clock.advance(100);
      const early = await append({ events: batch('x', 2), idempotency: idem }).catch(
        (e: unknown) => e,
      );
      expect(early).toBeInstanceOf(IdempotencyInProgressError);
      expect((early as IdempotencyInProgressError).retryAfterMs).toBeGreaterThan(0);

      // ...and after it, gets the original result: the orphan, rolled forward, exactly once.
      clock.advance(5_000);
      const retry = await append({ events: batch('x', 2), idempotency: idem });
      expect(retry).toMatchObject({ replayed: true, response: { firstSeq: 2, lastSeq: 3 } });
      expect(await append({ events: batch('x', 2), idempotency: idem })).toEqual(retry);
      const events = await allEvents();
      expect(events.map((e) => [e.seq, (e.payload as { label: string }).label])).toEqual([
        [1, 'before'],
        [2, 'x'],
        [3, 'x'],
      ]);
      expect(await reader.verify(T, S)).toMatchObject({ ok: true, seq: 3 });
    });

    it('dies after writing the segment: the next writer rolls it forward, then appends', async () => {
      await expect(
        crashing('segment-written').append({
          tenant: T,
          stream: S,
          events: batch('orphan'),
          idempotency: idem,
        }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      const next = await append({ events: batch('next') });
      expect(next.response).toMatchObject({ firstSeq: 2, lastSeq: 2 });
      expect((await allEvents()).map((e) => (e.payload as { label: string }).label)).toEqual([
        'orphan',
        'next',
      ]);
      // The dead writer's retry gets its original answer, without appending again.
      const retry = await append({ events: batch('orphan'), idempotency: idem });
      expect(retry).toMatchObject({ replayed: true, response: { firstSeq: 1, lastSeq: 1 } });
      expect((await reader.head(T, S)).seq).toBe(2);
    });

    it('dies after committing: the retry with the same key gets the stored result', async () => {
      await expect(
        crashing('committed').append({
          tenant: T,
          stream: S,
          events: batch('x', 3),
          idempotency: idem,
        }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      expect((await reader.head(T, S)).seq).toBe(3);
      const retry = await append({ events: batch('x', 3), idempotency: idem });
      expect(retry).toMatchObject({ replayed: true, response: { firstSeq: 1, lastSeq: 3 } });
      expect((await allEvents()).length).toBe(3);
    });

    it('never rolls forward an orphan that does not verify', async () => {
      await append({ events: batch('a') });
      await expect(
        crashing('segment-written').append({ tenant: T, stream: S, events: batch('evil') }),
      ).rejects.toBeInstanceOf(CrashInjectedError);
      await stores.tamper(segmentKey(T, S, 2), (b) => {
        b[b.length - 40] = (b[b.length - 40] ?? 0) ^ 1;
        return b;
      });
      await expect(append({ events: batch('b') })).rejects.toBeInstanceOf(TamperedLedgerError);
      expect((await reader.head(T, S)).seq).toBe(1);
    });
  });

  describe('concurrency', () => {
    it('never forks, gaps or loses an acknowledged event under racing writers', async () => {
      const writers = 6;
      const perWriter = 5;
      const acks = await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const mine = new Appender({ ...stores, clock, maxAttempts: 100 });
          const results = [];
          for (let i = 0; i < perWriter; i++) {
            results.push(await mine.append({ tenant: T, stream: S, events: batch(`w${w}-${i}`) }));
          }
          return results;
        }),
      );
      const events = await allEvents();
      expect(events.map((e) => e.seq)).toEqual(
        Array.from({ length: writers * perWriter }, (_, i) => i + 1),
      );
      const labels = events.map((e) => (e.payload as { label: string }).label).sort();
      const expected = Array.from({ length: writers }, (_, w) =>
        Array.from({ length: perWriter }, (_, i) => `w${w}-${i}`),
      )
        .flat()
        .sort();
      expect(labels).toEqual(expected);
      for (const ack of acks.flat()) {
        expect(events[ack.response.firstSeq - 1]?.hash).toBe(ack.response.head.hash);
      }
      expect(await reader.verify(T, S)).toMatchObject({ ok: true, seq: writers * perWriter });
    });

    it('appends a request once when its retries race each other', async () => {
      const idem = { key: 'dup', digest: 'd'.repeat(64) };
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () =>
          new Appender({ ...stores, clock }).append({
            tenant: T,
            stream: S,
            events: batch('once', 2),
            idempotency: idem,
          }),
        ),
      );
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(IdempotencyInProgressError);
      }
      clock.advance(5_000);
      const final = await append({ events: batch('once', 2), idempotency: idem });
      expect(final.response).toMatchObject({ firstSeq: 1, lastSeq: 2 });
      expect((await allEvents()).length).toBe(2);
    });
  });

  describe('tampering', () => {
    beforeEach(async () => {
      for (let i = 0; i < 4; i++) await append({ events: batch(`b${i}`, 3) });
    });

    it('reports the first bad seq when any byte of a segment changes', async () => {
      const key = segmentKey(T, S, 7);
      const original = await stores.objects.get(key);
      const size = original?.body.length ?? 0;
      for (const at of [0, 20, Math.floor(size / 2), size - 33, size - 1]) {
        await stores.tamper(key, (b) => {
          b[at] = (b[at] ?? 0) ^ 0x40;
          return b;
        });
        const result = await reader.verify(T, S);
        expect(result, `byte ${at}`).toMatchObject({ ok: false, code: 'ErrTamperedLedger' });
        if (!result.ok) expect(result.firstBadSeq).toBeGreaterThanOrEqual(7);
        await stores.tamper(key, () => Uint8Array.from(original?.body ?? []));
        expect(await reader.verify(T, S)).toMatchObject({ ok: true });
      }
    });

    it('fails reads that touch tampered data closed and serves the rest', async () => {
      await stores.tamper(segmentKey(T, S, 7), (b) => {
        b[b.length - 1] = (b[b.length - 1] ?? 0) ^ 1;
        return b;
      });
      await expect(reader.readEvents(T, S, { from: 1, limit: 100 })).rejects.toBeInstanceOf(
        TamperedLedgerError,
      );
      await expect(reader.readEvents(T, S, { from: 8, limit: 1 })).rejects.toMatchObject({
        firstBadSeq: 9,
      });
      expect((await reader.readEvents(T, S, { from: 1, limit: 6 })).events.length).toBe(6);
    });

    it('reports a deleted segment as tampered', async () => {
      await stores.objects.delete(segmentKey(T, S, 4));
      expect(await reader.verify(T, S)).toMatchObject({ ok: false, firstBadSeq: 4 });
    });

    it('refuses a segment copied in from another stream', async () => {
      await appender.append({ tenant: T, stream: 'run-2', events: batch('other', 3) });
      const foreign = await stores.objects.get(segmentKey(T, 'run-2', 1));
      await stores.tamper(segmentKey(T, S, 1), () => Uint8Array.from(foreign?.body ?? []));
      expect(await reader.verify(T, S)).toMatchObject({ ok: false, firstBadSeq: 1 });
    });
  });
});
