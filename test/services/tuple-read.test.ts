import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { segmentKey } from '../../shared/chain/storage-keys.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import { digestV2 } from '../../shared/domain/state-v2/index.js';
import { MAX_DELTAS, type TupleAnswer } from '../../shared/state/tuple-read.js';
import { compactionWorld, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const S = 'thread-1';
const set = (path: string, value: unknown): DeltaOp => ({ op: 'set', path, value }) as DeltaOp;

describe.each(allStores.filter((f) => f.enabled))('conditional tuple reads on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  /** A labelled checkpoint on the head's state (linear) or on `baseSeq` (a branch). */
  const cp = async (
    label: string,
    ops: DeltaOp[],
    extra: { parentLabel?: string; baseSeq?: number } = {},
    tenant = T,
  ) => {
    const head = await world.ledger.appender.readHead(tenant, S);
    const baseDigest =
      extra.baseSeq === undefined
        ? head.stateDigest
        : (await world.ledger.states.hydrate(tenant, S, extra.baseSeq)).stateDigest;
    return world.ledger.checkpoints.checkpoint({
      tenant,
      stream: S,
      ops,
      baseDigest,
      label,
      ...extra,
    });
  };
  const read = (since?: { seq: number; stateDigest: string }, label?: string, tenant = T) =>
    world.ledger.tuples.read({ tenant, stream: S, since, label });
  /** The state the answer makes of `held` (what the client does with it). */
  const stateOf = (a: TupleAnswer, held: JsonObject): JsonObject => {
    if (a.answer === 'state') return a.state as JsonObject;
    const state = structuredClone(held);
    for (const d of a.deltas ?? []) applyOps(state, d.ops);
    return state;
  };

  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, { snapshotEvery: 3 });
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('answers unchanged for the state held, with the checkpoint and its writes', async () => {
    await cp('c1', [set('/messages', ['a'])]);
    const c2 = await cp('c2', [set('/messages/-', 'b')], { parentLabel: 'c1' });
    await world.ledger.pendingWrites.put(T, S, 'c2', {
      taskId: 't1',
      taskPath: '',
      writes: [{ idx: 0, channel: 'messages', value: 'c' }],
    });

    const a = await read({ seq: c2.seq, stateDigest: c2.stateDigest });

    expect(a.answer).toBe('unchanged');
    expect(a.state).toBeUndefined();
    expect(a.deltas).toBeUndefined();
    expect(a).toMatchObject({ seq: c2.seq, stateDigest: c2.stateDigest });
    expect(a.checkpoint).toMatchObject({ label: 'c2', seq: c2.seq, parentLabel: 'c1' });
    expect(a.writes).toEqual([
      { taskId: 't1', taskPath: '', idx: 0, channel: 'messages', value: 'c' },
    ]);
  });

  it('answers the deltas since an earlier state of the line, which make the state', async () => {
    const c1 = await cp('c1', [set('/messages', ['a']), set('/n', 1)]);
    await cp('c2', [set('/messages/-', 'b')], { parentLabel: 'c1' });
    await world.ledger.appender.append({
      tenant: T,
      stream: S,
      events: [{ type: 'observation', payload: { between: true } }],
    });
    const c3 = await cp('c3', [set('/messages/-', 'c'), { op: 'delete', path: '/n' }], {
      parentLabel: 'c2',
    });
    const held = (await world.ledger.states.hydrate(T, S, c1.seq)).state;

    const a = await read({ seq: c1.seq, stateDigest: c1.stateDigest });

    expect(a.answer).toBe('deltas');
    expect(a.deltas?.map((d) => d.seq)).toEqual([2, 4]);
    expect(a.checkpoint?.label).toBe('c3');
    const state = stateOf(a, held);
    expect(state).toEqual({ messages: ['a', 'b', 'c'] });
    expect(digestV2(state)).toBe(c3.stateDigest);
    expect(a.stateDigest).toBe(c3.stateDigest);
  });

  it('answers the state whole with nothing held, a digest not on the chain, or a branch between', async () => {
    const c1 = await cp('c1', [set('/messages', ['a'])]);
    const c2 = await cp('c2', [set('/messages/-', 'b')], { parentLabel: 'c1' });
    expect((await read()).answer).toBe('state');
    expect((await read()).state).toEqual({ messages: ['a', 'b'] });
    const wrong = await read({ seq: c1.seq, stateDigest: c2.stateDigest });
    expect(wrong.answer).toBe('state');
    // c3 branches from c1: the state held at c2 is not on its line.
    await cp('c3', [set('/messages/-', 'x')], { parentLabel: 'c1', baseSeq: c1.seq });
    const branched = await read({ seq: c2.seq, stateDigest: c2.stateDigest });
    expect(branched.answer).toBe('state');
    expect(branched.state).toEqual({ messages: ['a', 'x'] });
    // An older checkpoint by label: its own state, whatever is held.
    const old = await read({ seq: c2.seq, stateDigest: c2.stateDigest }, 'c1');
    expect(old).toMatchObject({ answer: 'state', state: { messages: ['a'] }, seq: c1.seq });
  });

  it(`answers the state past ${MAX_DELTAS} deltas`, async () => {
    const c0 = await cp('c0', [set('/n', 0)]);
    for (let i = 1; i <= MAX_DELTAS + 1; i++) await cp(`c${i}`, [set('/n', i)]);
    const a = await read({ seq: c0.seq, stateDigest: c0.stateDigest });
    expect(a).toMatchObject({ answer: 'state', state: { n: MAX_DELTAS + 1 } });
  });

  it('refuses a tampered stored delta (ErrTamperedLedger) instead of answering it', async () => {
    const c1 = await cp('c1', [set('/messages', ['a'])]);
    await cp('c2', [set('/messages/-', 'b')], { parentLabel: 'c1' });
    await stores.tamper(segmentKey(T, S, 2), (b) => {
      b[b.length - 40] = (b[b.length - 40] ?? 0) ^ 1;
      return b;
    });
    // A fresh ledger over the same stores: nothing of the stream is warm in this process.
    world = compactionWorld(stores, { snapshotEvery: 3 });

    await expect(read({ seq: c1.seq, stateDigest: c1.stateDigest })).rejects.toBeInstanceOf(
      TamperedLedgerError,
    );
    await expect(read()).rejects.toBeInstanceOf(TamperedLedgerError);
  });

  it('keeps tenants apart: one tenant’s held state never answers another’s stream', async () => {
    const a1 = await cp('c1', [set('/who', 'a')], {}, 'tenant-a');
    await cp('c1', [set('/who', 'b')], {}, 'tenant-b');

    const b = await read({ seq: a1.seq, stateDigest: a1.stateDigest }, undefined, 'tenant-b');

    expect(b.answer).toBe('state');
    expect(b.state).toEqual({ who: 'b' });
    expect((await read(undefined, undefined, 'tenant-a')).state).toEqual({ who: 'a' });
  });

  it('pages checkpoints with one state whole and each newer one as deltas; refuses a tampered one', async () => {
    await cp('c1', [set('/messages', ['a'])]);
    await cp('c2', [set('/messages/-', 'b')], { parentLabel: 'c1' });
    const c3 = await cp('c3', [set('/messages/-', 'c')], { parentLabel: 'c2' });
    await cp('c4', [set('/messages/-', 'x')], { parentLabel: 'c2', baseSeq: 2 });

    const page = await world.ledger.tuples.page(T, S, { limit: 3 });

    expect(page.tuples.map((t) => [t.checkpoint.label, t.state ? 'state' : 'deltas'])).toEqual([
      ['c4', 'state'], // a branch: not on c3's line
      ['c3', 'deltas'],
      ['c2', 'state'],
    ]);
    const c3State = structuredClone(page.tuples[2]?.state as JsonObject);
    for (const d of page.tuples[1]?.deltas ?? []) applyOps(c3State, d.ops);
    expect(digestV2(c3State)).toBe(c3.stateDigest);
    expect(page.next).toBe(2);

    await stores.tamper(segmentKey(T, S, 3), (b) => {
      b[b.length - 40] = (b[b.length - 40] ?? 0) ^ 1;
      return b;
    });
    world = compactionWorld(stores, { snapshotEvery: 3 });
    await expect(world.ledger.tuples.page(T, S, { limit: 3 })).rejects.toBeInstanceOf(
      TamperedLedgerError,
    );
  });
});
