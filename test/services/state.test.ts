import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { Reader } from '../../shared/chain/reader.js';
import { Appender } from '../../shared/commit/append.js';
import { CheckpointLabels } from '../../shared/commit/labels.js';
import {
  DivergenceError,
  InvalidDeltaError,
  StreamExistsError,
  TamperedLedgerError,
} from '../../shared/domain/errors.js';
import { applyOps, DELTA_EVENT, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Checkpointer } from '../../shared/state/checkpoint.js';
import { StateStore } from '../../shared/state/state.js';
import { countingObjects } from '../support/counting.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const S = 'agent-1';
const digest = (state: JsonObject) => digestV2(state);

const build = (stores: Pick<StorePair, 'objects' | 'records'>, snapshotEvery = 3) => {
  const clock = { now: () => Date.now() };
  const appender = new Appender({ ...stores, clock });
  const reader = new Reader(stores);
  const states = new StateStore({ ...stores, reader, snapshotEvery });
  const labels = new CheckpointLabels(stores.records);
  const checkpointer = new Checkpointer({ appender, states, reader, labels });
  return { appender, reader, states, checkpointer };
};

describe.each(allStores.filter((f) => f.enabled))(
  'checkpoints and hydration on $name',
  (factory) => {
    let stores: StorePair;
    let svc: ReturnType<typeof build>;
    let model: JsonObject;
    const checkpoint = async (ops: DeltaOp[], stream = S) => {
      const baseDigest = (await svc.appender.readHead(T, stream)).stateDigest;
      return svc.checkpointer.checkpoint({ tenant: T, stream, ops, baseDigest });
    };

    beforeEach(async () => {
      stores = await factory.make();
      svc = build(stores);
      model = {};
    });
    afterEach(async () => {
      await stores.cleanup();
    });

    it('starts from {} and moves the digest with every delta', async () => {
      expect((await svc.appender.readHead(T, S)).stateDigest).toBe(EMPTY_STATE_DIGEST_V2);
      const r1 = await checkpoint([{ op: 'set', path: '/messages', value: ['hi'] }]);
      const r2 = await checkpoint([
        { op: 'set', path: '/messages/1', value: 'there' },
        { op: 'set', path: '/turn', value: 2 },
      ]);
      const r3 = await checkpoint([{ op: 'delete', path: '/turn' }]);
      expect(r1).toMatchObject({ seq: 1, stateDigest: digest({ messages: ['hi'] }) });
      expect(r2.stateDigest).toBe(digest({ messages: ['hi', 'there'], turn: 2 }));
      expect(r3).toMatchObject({ seq: 3, stateDigest: digest({ messages: ['hi', 'there'] }) });
      const now = await svc.states.hydrate(T, S);
      expect(now).toMatchObject({
        seq: 3,
        state: { messages: ['hi', 'there'] },
        stateDigest: r3.stateDigest,
      });
    });

    it('refuses a stale baseDigest or a wrong stateDigest and writes nothing', async () => {
      await checkpoint([{ op: 'set', path: '/a', value: 1 }]);
      const stale = svc.checkpointer.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/a', value: 2 }],
        baseDigest: EMPTY_STATE_DIGEST_V2,
      });
      await expect(stale).rejects.toBeInstanceOf(DivergenceError);
      const baseDigest = digest({ a: 1 });
      const wrongPost = svc.checkpointer.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/a', value: 2 }],
        baseDigest,
        stateDigest: digest({ a: 3 }),
      });
      await expect(wrongPost).rejects.toBeInstanceOf(DivergenceError);
      expect((await svc.appender.readHead(T, S)).seq).toBe(1);
      expect((await checkpoint([{ op: 'set', path: '/a', value: 2 }])).seq).toBe(2);
    });

    it('refuses ops that cannot apply, writes nothing, and stays usable', async () => {
      await checkpoint([
        { op: 'set', path: '/a', value: { b: 1 } },
        { op: 'set', path: '/n', value: 5 },
      ]);
      for (const ops of [
        [{ op: 'delete', path: '/missing' }],
        [{ op: 'set', path: '/n/x', value: 1 }],
        [
          { op: 'set', path: '/a/c', value: 1 },
          { op: 'delete', path: '/a/zz' },
        ],
        [{ op: 'set', path: 'no-slash', value: 1 }],
      ] as DeltaOp[][]) {
        await expect(checkpoint(ops)).rejects.toBeInstanceOf(InvalidDeltaError);
      }
      expect((await svc.appender.readHead(T, S)).seq).toBe(1);
      // The half-applied attempt above must not leak into the next checkpoint's base state.
      await checkpoint([{ op: 'set', path: '/a/d', value: 2 }]);
      expect((await svc.states.hydrate(T, S)).state).toEqual({ a: { b: 1, d: 2 }, n: 5 });
    });

    it('hydrates every past seq from one base and at most K deltas, across other events', async () => {
      const history: JsonObject[] = [{}];
      for (let turn = 1; turn <= 11; turn++) {
        if (turn % 4 === 0) {
          await svc.appender.append({
            tenant: T,
            stream: S,
            events: [{ type: 'observation', payload: { turn } }],
          });
          history.push(structuredClone(model));
          continue;
        }
        const ops: DeltaOp[] = [{ op: 'set', path: `/k${turn % 5}`, value: turn }];
        if (turn % 3 === 0) ops.push({ op: 'delete', path: `/k${(turn - 1) % 5}` });
        model = applyOps(model, ops);
        await checkpoint(ops);
        history.push(structuredClone(model));
      }
      for (let seq = 1; seq < history.length; seq++) {
        const at = await svc.states.hydrate(T, S, seq);
        expect(at.state, `seq ${seq}`).toEqual(history[seq]);
        expect(at.stateDigest).toBe(digest(history[seq] as JsonObject));
        expect(at.deltasApplied).toBeLessThanOrEqual(3);
      }
    });

    it('lets a checkpoint follow other events without a conflict', async () => {
      await checkpoint([{ op: 'set', path: '/x', value: 1 }]);
      const baseDigest = digest({ x: 1 });
      await svc.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'tool.result', payload: { ok: true } }],
      });
      const r = await svc.checkpointer.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/y', value: 2 }],
        baseDigest,
      });
      expect(r.seq).toBe(3);
    });

    it('replays a checkpoint with the same idempotency key', async () => {
      const idempotency = { key: 'turn-1', digest: 'f'.repeat(64) };
      const req = {
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/a', value: 1 }] as DeltaOp[],
        baseDigest: EMPTY_STATE_DIGEST_V2,
        idempotency,
      };
      const first = await svc.checkpointer.checkpoint(req);
      const again = await svc.checkpointer.checkpoint(req);
      expect(again).toEqual({ ...first, replayed: true });
      expect((await svc.appender.readHead(T, S)).seq).toBe(1);
    });

    it('fails hydration closed when a snapshot is altered or missing', async () => {
      for (let i = 0; i < 4; i++) await checkpoint([{ op: 'set', path: `/k${i}`, value: i }]);
      const snaps = await stores.objects.list(`t/${T}/s/${S}/snap/`);
      const key = snaps.items[0]?.key ?? '';
      expect(key).toContain('/snap/0000000000000003-');
      await stores.tamper(key, (b) => {
        b[b.length - 2] = (b[b.length - 2] ?? 0) ^ 1;
        return b;
      });
      await expect(svc.states.hydrate(T, S, 4)).rejects.toBeInstanceOf(TamperedLedgerError);
      await stores.objects.delete(key);
      await expect(svc.states.hydrate(T, S, 3)).rejects.toBeInstanceOf(TamperedLedgerError);
      expect((await svc.states.hydrate(T, S, 2)).state).toEqual({ k0: 0, k1: 1 });
    });

    it('traps a recorded delta whose digest does not match its ops', async () => {
      await checkpoint([{ op: 'set', path: '/a', value: 1 }]);
      const forged = {
        ops: [{ op: 'set', path: '/a', value: 2 }],
        baseDigest: digest({ a: 1 }),
        stateDigest: digest({ a: 99 }),
      };
      await svc.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: DELTA_EVENT, payload: forged }],
      });
      await expect(svc.states.hydrate(T, S, 2)).rejects.toMatchObject({
        code: 'ErrDivergenceDetected',
        seq: 2,
      });
      expect((await svc.states.hydrate(T, S, 1)).state).toEqual({ a: 1 });
    });

    it('forks a stream at any seq, leaving the source untouched; forks of forks work', async () => {
      for (let i = 1; i <= 5; i++) await checkpoint([{ op: 'set', path: `/k${i}`, value: i }]);
      const fork = await svc.checkpointer.fork({
        tenant: T,
        source: S,
        at: 2,
        newStreamId: 'fork-a',
      });
      expect(fork).toMatchObject({
        streamId: 'fork-a',
        seq: 1,
        stateDigest: digest({ k1: 1, k2: 2 }),
        source: { streamId: S, seq: 2 },
      });
      await checkpoint([{ op: 'set', path: '/forked', value: true }], 'fork-a');
      expect((await svc.states.hydrate(T, 'fork-a')).state).toEqual({ k1: 1, k2: 2, forked: true });
      expect((await svc.states.hydrate(T, S)).state).toEqual({ k1: 1, k2: 2, k3: 3, k4: 4, k5: 5 });
      const grand = await svc.checkpointer.fork({
        tenant: T,
        source: 'fork-a',
        at: 2,
        newStreamId: 'fork-b',
      });
      expect((await svc.states.hydrate(T, 'fork-b')).state).toEqual({ k1: 1, k2: 2, forked: true });
      expect(grand.source).toMatchObject({ streamId: 'fork-a', seq: 2 });
      await expect(
        svc.checkpointer.fork({ tenant: T, source: S, at: 1, newStreamId: 'fork-a' }),
      ).rejects.toBeInstanceOf(StreamExistsError);
      expect(await svc.reader.verify(T, 'fork-b')).toMatchObject({ ok: true });
    });
  },
);

describe('hydration cost', () => {
  it('reads no more objects for a 10,000-turn stream than for a 30-turn one', async () => {
    const reads: number[] = [];
    for (const turns of [30, 10_000]) {
      const counting = countingObjects(new MemoryObjectStore());
      const svc = build({ objects: counting.store, records: new MemoryRecordStore() }, 25);
      let baseDigest = EMPTY_STATE_DIGEST_V2;
      for (let t = 1; t <= turns; t++) {
        baseDigest = (
          await svc.checkpointer.checkpoint({
            tenant: T,
            stream: S,
            ops: [{ op: 'set', path: `/k${t % 40}`, value: t }],
            baseDigest,
          })
        ).stateDigest;
      }
      // StateStore keeps no cache: every hydration reads its base and deltas from storage.
      counting.reset();
      const hydrated = await svc.states.hydrate(T, S);
      expect(hydrated.stateDigest).toBe(baseDigest);
      reads.push(counting.counts.get);
    }
    // 30 turns: the base at 25, the segment of its delta (which binds it to the chain) and 5
    // deltas; 10,000 turns: the base at 10,000 and its delta's segment.
    expect(reads).toEqual([7, 2]);
  }, 120_000);
});

describe('property: checkpoints through the service equal applying the ops in memory', () => {
  const key = fc.constantFrom('a', 'b', 'c', 'd');
  const op = fc.oneof(
    fc.record({
      op: fc.constant('set' as const),
      path: fc.array(key, { minLength: 1, maxLength: 3 }).map((p) => `/${p.join('/')}`),
      value: fc.jsonValue({ maxDepth: 2 }),
    }),
    fc.record({
      op: fc.constant('delete' as const),
      path: fc.array(key, { minLength: 1, maxLength: 3 }).map((p) => `/${p.join('/')}`),
    }),
  );

  it('holds at every seq, with and without snapshots in between', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 1, max: 6 }),
        async (turns, k) => {
          const svc = build(
            { objects: new MemoryObjectStore(), records: new MemoryRecordStore() },
            k,
          );
          let state: JsonObject = {};
          const history: JsonObject[] = [{}];
          for (const ops of turns) {
            let next: JsonObject;
            try {
              next = applyOps(structuredClone(state), ops as DeltaOp[]);
            } catch (err) {
              expect(err).toBeInstanceOf(InvalidDeltaError);
              await expect(
                svc.checkpointer.checkpoint({
                  tenant: T,
                  stream: S,
                  ops: ops as DeltaOp[],
                  baseDigest: digest(state),
                }),
              ).rejects.toBeInstanceOf(InvalidDeltaError);
              continue;
            }
            const r = await svc.checkpointer.checkpoint({
              tenant: T,
              stream: S,
              ops: ops as DeltaOp[],
              baseDigest: digest(state),
            });
            state = next;
            history.push(structuredClone(state));
            expect(r.stateDigest).toBe(digest(state));
          }
          for (let seq = 1; seq < history.length; seq++) {
            expect((await svc.states.hydrate(T, S, seq)).state).toEqual(history[seq]);
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 60_000);
});
