import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { headKey } from '../../shared/chain/storage-keys.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import { digestV2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Item } from '../../shared/ports/record-store.js';
import { readStateValue } from '../../shared/state/state-read.js';
import { awsStores, localStores, type StorePair } from '../support/stores.js';

/**
 * Streams written by the v1 code (scripts/fixtures/make-v1-fixture.ts, committed before state
 * v2) must keep hydrating, verifying and forking exactly as they did: same digests at every
 * seq, same chain, same fork origin. If this test fails, a change broke v1 compatibility —
 * fix the code, never the fixture.
 */

interface StreamExpect {
  tenant: string;
  stream: string;
  head: { seq: number; hash: string; stateDigest: string };
  verify: { ok: boolean; seq: number; hash: string };
  events: Array<{ seq: number; type: string; hash: string }>;
  states: Array<{ seq: number; stateDigest: string; hash: string; baseSeq: number }>;
  finalState: JsonObject;
}

interface Fixture {
  format: string;
  clockMs: number;
  snapshotEvery: number;
  objects: Array<{ key: string; body: string }>;
  records: Item[];
  expect: {
    streams: StreamExpect[];
    forks: Array<{ tenant: string; stream: string; origin: unknown }>;
  };
}

const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/v1-streams.json'), 'utf8'),
) as Fixture;

const v1Digest = (state: JsonObject) => sha256Hex(canonicalJson(state));

/** Memory stores on the fixture's clock, so its idempotency records are still live. */
const memoryAtFixtureTime = {
  name: 'memory (fixture clock)',
  enabled: true,
  make: async (): Promise<StorePair> => {
    const objects = new MemoryObjectStore();
    return {
      objects,
      records: new MemoryRecordStore({ clock: { now: () => fixture.clockMs } }),
      tamper: async (key, mutate) => {
        const current = await objects.get(key);
        if (!current) throw new Error(`nothing to tamper at ${key}`);
        await objects.putIfMatch(key, mutate(current.body), current.etag);
      },
      cleanup: async () => {},
    };
  },
};

const load = async (stores: StorePair) => {
  for (const o of fixture.objects) {
    await stores.objects.putIfAbsent(o.key, Buffer.from(o.body, 'base64'));
  }
  for (const item of fixture.records) await stores.records.put(item);
};

describe('the v1 fixture', () => {
  it('holds what it claims: several streams, base snapshots, a fork, an effect, merged segments', () => {
    expect(fixture.format).toBe('hefesto.v1-fixture');
    const byName = new Map(fixture.expect.streams.map((s) => [`${s.tenant}/${s.stream}`, s]));
    const chat = byName.get('acme/chat');
    expect(chat && new Set(chat.states.map((s) => s.baseSeq)).size).toBeGreaterThanOrEqual(3);
    expect(chat?.events.some((e) => e.type === 'hefesto.effect.completed')).toBe(true);
    expect(chat?.events.some((e) => e.type === 'observation')).toBe(true);
    expect(byName.get('acme/chat-fork')?.events[0]?.type).toBe('hefesto.fork');
    expect(byName.has('globex/chat')).toBe(true);
    expect(fixture.objects.some((o) => /\/merged\/seg\/\d+-\d+$/.test(o.key))).toBe(true);
    expect(fixture.objects.some((o) => o.key.includes('/snap/'))).toBe(true);
  });
});

describe.each([memoryAtFixtureTime, localStores, awsStores].filter((f) => f.enabled))(
  'v1 streams made by the v1 code, loaded into $name stores',
  (factory) => {
    let stores: StorePair;
    let ledger: Ledger;
    const open = async () => {
      stores = await factory.make();
      await load(stores);
      ledger = new Ledger(
        { ...stores, clock: { now: () => fixture.clockMs + 1000 } },
        { snapshotEvery: fixture.snapshotEvery },
      );
    };
    // Reads share one load; the two tests that write load their own copy.
    beforeAll(open);
    afterAll(async () => {
      await stores.cleanup();
    });

    it.each(fixture.expect.streams.map((s) => [`${s.tenant}/${s.stream}`, s] as const))(
      '%s hydrates at every seq to the recorded digest, verifies and reads the same chain',
      async (_, s) => {
        const head = await ledger.reader.head(s.tenant, s.stream);
        expect({ seq: head.seq, hash: head.hash, stateDigest: head.stateDigest }).toEqual(s.head);
        expect(await ledger.reader.verify(s.tenant, s.stream)).toEqual(s.verify);
        const { events } = await ledger.reader.readEvents(s.tenant, s.stream, {
          from: 1,
          limit: 1000,
        });
        expect(events.map((e) => ({ seq: e.seq, type: e.type, hash: e.hash }))).toEqual(s.events);
        for (const expected of s.states) {
          const at = await ledger.states.hydrate(s.tenant, s.stream, expected.seq);
          expect({
            seq: at.seq,
            stateDigest: at.stateDigest,
            hash: at.hash,
            baseSeq: at.baseSeq,
          }).toEqual(expected);
          // The digest is v1: SHA-256 of the RFC 8785 canonical JSON of the state.
          expect(v1Digest(at.state)).toBe(expected.stateDigest);
        }
        const last = await ledger.states.hydrate(s.tenant, s.stream);
        expect(last.state).toEqual(s.finalState);
      },
    );

    it('reads the fork origin as recorded', async () => {
      for (const f of fixture.expect.forks) {
        expect(await ledger.states.forkOrigin(f.tenant, f.stream)).toEqual(f.origin);
      }
    });

    it('keeps checkpointing a v1 stream with v1 digests', async () => {
      await stores.cleanup();
      await open();
      const s = fixture.expect.streams.find((x) => x.stream === 'chat' && x.tenant === 'acme');
      if (!s) throw new Error('fixture lacks acme/chat');
      const ops: DeltaOp[] = [{ op: 'set', path: '/messages/-', value: { role: 'user' } }];
      const result = await ledger.checkpoints.checkpoint({
        tenant: s.tenant,
        stream: s.stream,
        ops,
        baseDigest: s.head.stateDigest,
      });
      const expected = applyOps(structuredClone(s.finalState), ops);
      expect(result).toMatchObject({ seq: s.head.seq + 1, stateDigest: v1Digest(expected) });
      const now = await ledger.states.hydrate(s.tenant, s.stream);
      expect(now.stateDigest).toBe(v1Digest(expected));
      expect(await ledger.reader.verify(s.tenant, s.stream)).toMatchObject({ ok: true });
    });

    it('keeps the v1 streams v1: no digestVersion on the head, and a v2 digest is trapped', async () => {
      await stores.cleanup();
      await open();
      for (const s of fixture.expect.streams) {
        const head = await stores.records.get(headKey(s.tenant, s.stream));
        expect(head?.digestVersion).toBeUndefined();
      }
      const s = fixture.expect.streams.find((x) => x.stream === 'chat' && x.tenant === 'acme');
      if (!s) throw new Error('fixture lacks acme/chat');
      // The divergence trap compares v1 digests: the v2 digest of the same state is stale.
      await expect(
        ledger.checkpoints.checkpoint({
          tenant: s.tenant,
          stream: s.stream,
          ops: [{ op: 'set', path: '/x', value: 1 }],
          baseDigest: digestV2(s.finalState),
        }),
      ).rejects.toMatchObject({ code: 'ErrDivergenceDetected' });
      expect((await ledger.reader.head(s.tenant, s.stream)).seq).toBe(s.head.seq);
    });

    it('reads a v1 stream by path, and refuses a proof (a v1 digest covers the whole state)', async () => {
      const s = fixture.expect.streams.find((x) => x.stream === 'chat' && x.tenant === 'acme');
      if (!s) throw new Error('fixture lacks acme/chat');
      const read = { tenant: s.tenant, stream: s.stream, path: '/profile/city' };
      expect(await readStateValue(ledger.states, read)).toMatchObject({
        seq: s.head.seq,
        stateDigest: s.head.stateDigest,
        digestVersion: 1,
        value: s.finalState.profile && (s.finalState.profile as JsonObject).city,
      });
      await expect(readStateValue(ledger.states, { ...read, proof: true })).rejects.toMatchObject({
        code: 'ErrInvalidInput',
      });
    });

    it('forks a v1 stream into a v2 stream that hydrates, verifies and checkpoints with v2', async () => {
      await stores.cleanup();
      await open();
      const at = await ledger.states.hydrate('acme', 'chat', 43);
      const fork = await ledger.checkpoints.fork({
        tenant: 'acme',
        source: 'chat',
        at: 43,
        newStreamId: 'chat-v2',
      });
      expect(at.stateDigest).toBe(v1Digest(at.state));
      expect(fork.stateDigest).toBe(digestV2(at.state));
      expect(await stores.records.get(headKey('acme', 'chat-v2'))).toMatchObject({
        digestVersion: 2,
        stateDigest: digestV2(at.state),
      });
      expect(await ledger.reader.verify('acme', 'chat-v2')).toMatchObject({ ok: true });
      const ops: DeltaOp[] = [{ op: 'set', path: '/forked', value: true }];
      const next = await ledger.checkpoints.checkpoint({
        tenant: 'acme',
        stream: 'chat-v2',
        ops,
        baseDigest: fork.stateDigest,
      });
      const expected = applyOps(structuredClone(at.state), ops);
      expect(next.stateDigest).toBe(digestV2(expected));
      expect((await ledger.states.hydrate('acme', 'chat-v2')).stateDigest).toBe(next.stateDigest);
      // The v1 source is untouched and still v1.
      expect((await ledger.reader.head('acme', 'chat')).stateDigest).toBe(
        fixture.expect.streams.find((x) => x.stream === 'chat' && x.tenant === 'acme')?.head
          .stateDigest,
      );
    });

    it('fails closed on a tampered v1 snapshot', async () => {
      await stores.cleanup();
      await open();
      const snap = fixture.objects.find((o) => o.key.includes('/chat/snap/'));
      if (!snap) throw new Error('fixture lacks a chat snapshot');
      await stores.tamper(snap.key, (body) => {
        const copy = Uint8Array.from(body);
        copy[copy.length - 2] = (copy[copy.length - 2] ?? 0) ^ 1;
        return copy;
      });
      const seq = Number(snap.key.split('/snap/')[1]?.split('-')[0]);
      await expect(ledger.states.hydrate('acme', 'chat', seq)).rejects.toMatchObject({
        code: 'ErrTamperedLedger',
      });
    });
  },
);
