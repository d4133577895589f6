import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

const digest = (state: unknown) => digestV2(state as JsonObject);

interface Checkpointed {
  seq: number;
  stateDigest: string;
}
interface StateBody {
  seq: number;
  state: JsonObject;
  stateDigest: string;
}

describe.each(STORE_FACTORIES)('state API on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const checkpoint = (
    stream: string,
    ops: DeltaOp[],
    baseDigest: string,
    extra: { stateDigest?: string; idem?: string } = {},
  ) =>
    h.request(`/v1/streams/${stream}/checkpoints`, {
      key,
      body: { ops, baseDigest, ...(extra.stateDigest ? { stateDigest: extra.stateDigest } : {}) },
      headers: extra.idem ? { 'idempotency-key': extra.idem } : {},
    });
  const state = (stream: string, at?: number) =>
    h.request(`/v1/streams/${stream}/state${at === undefined ? '' : `?at=${at}`}`, { key });

  beforeEach(async () => {
    h = createHarness(factory, { ledger: { snapshotEvery: 3 } });
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  describe('POST /v1/streams/{streamId}/checkpoints', () => {
    it('creates the stream, applies the ops and answers the new digest', async () => {
      const res = await checkpoint(
        'agent',
        [{ op: 'set', path: '/messages', value: [{ role: 'user', text: 'hi' }] }],
        EMPTY_STATE_DIGEST_V2,
      );
      expect(res.status).toBe(201);
      const body = await read<Checkpointed>(res);
      expect(body).toEqual({
        seq: 1,
        stateDigest: digest({ messages: [{ role: 'user', text: 'hi' }] }),
        incarnation: expect.any(String),
      });
      const next = await checkpoint(
        'agent',
        [
          { op: 'set', path: '/messages/-', value: 'more' },
          { op: 'set', path: '/turn', value: 2 },
        ],
        body.stateDigest,
        {
          stateDigest: digest({ messages: [{ role: 'user', text: 'hi' }, 'more'], turn: 2 }),
        },
      );
      expect(next.status).toBe(201);
      expect(await read<StateBody>(state('agent'))).toMatchObject({
        seq: 2,
        state: { messages: [{ role: 'user', text: 'hi' }, 'more'], turn: 2 },
      });
    });

    it('answers 409 ErrDivergenceDetected for a stale base or a wrong post digest, writing nothing', async () => {
      const first = await read<Checkpointed>(
        checkpoint('agent', [{ op: 'set', path: '/a', value: 1 }], EMPTY_STATE_DIGEST_V2),
      );
      const stale = await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 2 }],
        EMPTY_STATE_DIGEST_V2,
      );
      expect(stale.status).toBe(409);
      expect(await read<ProblemBody>(stale)).toMatchObject({ code: 'ErrDivergenceDetected' });
      const wrong = await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 2 }],
        first.stateDigest,
        { stateDigest: digest({ a: 3 }) },
      );
      expect(wrong.status).toBe(409);
      expect(wrong.headers.get('content-type')).toContain('application/problem+json');
      expect(await h.headSeq(key, 'agent')).toBe(1);
    });

    it('answers 422 ErrInvalidDelta for ops that cannot apply, writing nothing', async () => {
      const first = await read<Checkpointed>(
        checkpoint('agent', [{ op: 'set', path: '/n', value: 5 }], EMPTY_STATE_DIGEST_V2),
      );
      for (const ops of [
        [{ op: 'delete', path: '/missing' }],
        [{ op: 'set', path: '/n/x', value: 1 }],
      ] as DeltaOp[][]) {
        const res = await checkpoint('agent', ops, first.stateDigest);
        expect(res.status).toBe(422);
        expect(await read<ProblemBody>(res)).toMatchObject({ code: 'ErrInvalidDelta' });
      }
      expect(await h.headSeq(key, 'agent')).toBe(1);
    });

    it('answers 400 for malformed ops and digests', async () => {
      for (const body of [
        { ops: [{ op: 'set', path: 'no-slash', value: 1 }], baseDigest: EMPTY_STATE_DIGEST_V2 },
        { ops: [{ op: 'move', path: '/a', from: '/b' }], baseDigest: EMPTY_STATE_DIGEST_V2 },
        { ops: [{ op: 'set', path: '/a' }], baseDigest: EMPTY_STATE_DIGEST_V2 },
        { ops: [], baseDigest: EMPTY_STATE_DIGEST_V2 },
        { ops: [{ op: 'delete', path: '/a' }], baseDigest: 'nope' },
        { ops: [{ op: 'delete', path: '/a' }] },
      ]) {
        const res = await h.request('/v1/streams/agent/checkpoints', { key, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      expect(await h.headSeq(key, 'agent')).toBeUndefined();
    });

    it('replays a checkpoint by Idempotency-Key and refuses the key for another body', async () => {
      const first = await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 1 }],
        EMPTY_STATE_DIGEST_V2,
        { idem: 'turn-1' },
      );
      const again = await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 1 }],
        EMPTY_STATE_DIGEST_V2,
        { idem: 'turn-1' },
      );
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await read<Checkpointed>(again)).toEqual(await read<Checkpointed>(first));
      const other = await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 2 }],
        EMPTY_STATE_DIGEST_V2,
        { idem: 'turn-1' },
      );
      expect(other.status).toBe(422);
      expect(await h.headSeq(key, 'agent')).toBe(1);
    });

    it('keeps the service event types out of plain appends', async () => {
      const res = await h.append(key, 'agent', [{ type: 'hefesto.delta', payload: { ops: [] } }]);
      expect(res.status).toBe(400);
    });
  });

  describe('GET /v1/streams/{streamId}/state', () => {
    it('travels to any past seq, across other events, and writes base snapshots every K deltas', async () => {
      let base = EMPTY_STATE_DIGEST_V2;
      const history: JsonObject[] = [];
      let model: JsonObject = {};
      for (let turn = 1; turn <= 8; turn++) {
        if (turn === 4) {
          await h.append(key, 'agent', [{ type: 'observation', payload: { tool: 'search' } }]);
          history.push(structuredClone(model));
          continue;
        }
        const ops: DeltaOp[] = [{ op: 'set', path: `/k${turn}`, value: turn }];
        model = applyOps(model, ops);
        base = (await read<Checkpointed>(checkpoint('agent', ops, base))).stateDigest;
        history.push(structuredClone(model));
      }
      for (const [i, expected] of history.entries()) {
        const body = await read<StateBody>(state('agent', i + 1));
        expect(body, `seq ${i + 1}`).toEqual({
          seq: i + 1,
          state: expected,
          stateDigest: digest(expected),
          digestVersion: 2,
        });
      }
      const snaps = await h.objects.list('t/acme/s/agent/snap/');
      expect(snaps.items.map((o) => o.key.split('/').at(-1)?.slice(0, 16))).toEqual([
        '0000000000000003',
        '0000000000000007',
      ]);
    });

    it('answers 404 for an unknown stream and 400 for a seq past the head', async () => {
      expect((await state('nothing')).status).toBe(404);
      await checkpoint('agent', [{ op: 'set', path: '/a', value: 1 }], EMPTY_STATE_DIGEST_V2);
      expect((await state('agent', 2)).status).toBe(400);
      expect((await state('agent', 0)).status).toBe(400);
    });

    it('fails closed with ErrTamperedLedger when a stored delta is altered', async () => {
      await checkpoint(
        'agent',
        [{ op: 'set', path: '/a', value: 'original' }],
        EMPTY_STATE_DIGEST_V2,
      );
      const [seg] = (await h.objects.list('t/acme/s/agent/seg/')).items;
      const stored = await h.objects.get(seg?.key ?? '');
      const forged = Buffer.from(stored?.body ?? [])
        .toString('latin1')
        .replace('original', 'forgedXX');
      await h.objects.putIfMatch(seg?.key ?? '', Buffer.from(forged, 'latin1'), stored?.etag ?? '');
      const res = await state('agent');
      expect(res.status).toBe(500);
      expect(await read<ProblemBody & { firstBadSeq: number }>(res)).toMatchObject({
        code: 'ErrTamperedLedger',
        firstBadSeq: 1,
      });
    });
  });

  describe('POST /v1/streams/{streamId}/fork', () => {
    it('forks at a seq, leaves the source alone, and forks of forks work', async () => {
      let base = EMPTY_STATE_DIGEST_V2;
      for (let i = 1; i <= 4; i++)
        base = (
          await read<Checkpointed>(
            checkpoint('src', [{ op: 'set', path: `/k${i}`, value: i }], base),
          )
        ).stateDigest;
      const res = await h.request('/v1/streams/src/fork', {
        key,
        body: { newStreamId: 'child', at: 2 },
      });
      expect(res.status).toBe(201);
      const fork = await read<{
        streamId: string;
        seq: number;
        stateDigest: string;
        source: { streamId: string; seq: number; hash: string };
      }>(res);
      expect(fork).toMatchObject({
        streamId: 'child',
        seq: 1,
        stateDigest: digest({ k1: 1, k2: 2 }),
        source: { streamId: 'src', seq: 2 },
      });
      expect((await read<StateBody>(state('child'))).state).toEqual({ k1: 1, k2: 2 });
      await checkpoint('child', [{ op: 'delete', path: '/k1' }], fork.stateDigest);
      const grand = await h.request('/v1/streams/child/fork', {
        key,
        body: { newStreamId: 'grandchild', at: 2 },
      });
      expect(grand.status).toBe(201);
      expect((await read<StateBody>(state('grandchild'))).state).toEqual({ k2: 2 });
      expect((await read<StateBody>(state('src'))).state).toEqual({ k1: 1, k2: 2, k3: 3, k4: 4 });
      const again = await h.request('/v1/streams/src/fork', {
        key,
        body: { newStreamId: 'child', at: 1 },
      });
      expect(again.status).toBe(409);
      expect(await read<ProblemBody>(again)).toMatchObject({ code: 'ErrStreamExists' });
    });

    it("cannot fork another tenant's stream", async () => {
      await checkpoint('src', [{ op: 'set', path: '/secret', value: 1 }], EMPTY_STATE_DIGEST_V2);
      const other = await h.newKey('globex');
      const res = await h.request('/v1/streams/src/fork', {
        key: other,
        body: { newStreamId: 'stolen', at: 1 },
      });
      expect(res.status).toBe(404);
    });
  });
});

describe('property: random set/delete ops through the API equal applying them in memory', () => {
  const segment = fc.constantFrom('a', 'b', 'c', '0', '-');
  const path = fc.array(segment, { minLength: 1, maxLength: 3 }).map((p) => `/${p.join('/')}`);
  const op = fc.oneof(
    fc.record({ op: fc.constant('set' as const), path, value: fc.jsonValue({ maxDepth: 2 }) }),
    fc.record({ op: fc.constant('delete' as const), path }),
  );

  it('holds at every seq, with and without snapshots in between', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 15 }),
        fc.constantFrom(1, 2, 5, 1000),
        async (turns, k) => {
          const factory = STORE_FACTORIES[0];
          if (!factory) throw new Error('no memory factory');
          const h = createHarness(factory, { ledger: { snapshotEvery: k } });
          try {
            const key = await h.newKey('prop');
            let model: JsonObject = {};
            const history: JsonObject[] = [];
            for (const ops of turns) {
              let next: JsonObject | undefined;
              try {
                next = applyOps(structuredClone(model), ops as DeltaOp[]);
              } catch {
                next = undefined;
              }
              const res = await h.request('/v1/streams/p/checkpoints', {
                key,
                body: { ops, baseDigest: digest(model) },
              });
              if (next === undefined) {
                expect(res.status).toBe(422);
                continue;
              }
              expect(res.status).toBe(201);
              model = next;
              history.push(structuredClone(model));
            }
            for (const [i, expected] of history.entries()) {
              const res = await h.request(`/v1/streams/p/state?at=${i + 1}`, { key });
              expect((await read<StateBody>(res)).state).toEqual(expected);
            }
          } finally {
            h.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
