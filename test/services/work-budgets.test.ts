import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeltaOp } from '../../shared/domain/state.js';
import { type Chunk, chunksOfValue } from '../../shared/domain/state-v2/index.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { dedupBomb, SIXTY_FOUR_MIB_BOMB } from '../support/dedup-bomb.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 21 item 3, work budgets: identical pages are one chunk, so a few kilobytes of uploads
 * can name gigabytes of JSON. What a checkpoint or a read may materialise is counted expanded
 * (JSON values and canonical bytes, docs/state-v2.md "Limits"), and refused with
 * ErrPayloadTooLarge naming the budget before it is built. The stream's references to its
 * values are written only by checkpoints that commit, and a ref naming a chunk that was never
 * uploaded is the caller's error, naming the chunk.
 */

vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';

const refOp = (path: string, ref: { hash: string; size: number }) =>
  ({ op: 'set', path, ref }) as unknown as DeltaOp;

describe.each(allStores.filter((f) => f.enabled))('work budgets on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, { snapshotEvery: 100 }, manualClock());
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const upload = async (w: World, chunks: Chunk[]) => {
    for (const c of chunks) await w.ledger.states.values.putChunk(T, c.hash, c.bytes);
  };
  const checkpoint = async (w: World, stream: string, ops: DeltaOp[], extra = {}) => {
    const { stateDigest } = await w.ledger.appender.readHead(T, stream);
    return w.ledger.checkpoints.checkpoint({
      tenant: T,
      stream,
      ops,
      baseDigest: stateDigest,
      ...extra,
    });
  };
  const valueRefs = async (w: World, stream: string) =>
    (await w.ledger.states.chunks.refs(T, stream)).map((r) => r.sk);

  it('refuses the 64 MiB dedup bomb by its expanded size, twice, and goes on working', async () => {
    const bomb = SIXTY_FOUR_MIB_BOMB();
    expect(bomb.chunks.length).toBeLessThanOrEqual(5);
    expect(bomb.chunks.reduce((n, c) => n + c.bytes.length, 0)).toBeLessThan(200_000);
    await upload(world, bomb.chunks);
    for (const stream of ['bomb', 'bomb']) {
      await expect(checkpoint(world, stream, [refOp('/v', bomb.ref)])).rejects.toMatchObject({
        code: 'ErrPayloadTooLarge',
        overrun: { budget: 'stateNodes', limit: world.ledger.states.budget.maxNodes },
      });
    }
    // Nothing written for it: no head, no reference.
    expect((await world.ledger.appender.readHead(T, 'bomb')).seq).toBe(0);
    expect(await valueRefs(world, 'bomb')).toEqual([]);
    // 1,000 ops naming a value that fits alone, but not 1,000 times over.
    const small = dedupBomb(3_000, '[{},{}]'); // 9,001 JSON values
    await upload(world, small.chunks);
    const many = Array.from({ length: 1000 }, (_, i) => refOp(`/v${i}`, small.ref));
    await expect(checkpoint(world, 'many', many)).rejects.toMatchObject({
      code: 'ErrPayloadTooLarge',
    });
    expect(await valueRefs(world, 'many')).toEqual([]);
    // The same process still checkpoints and reads.
    await checkpoint(world, 'ok', [refOp('/v', small.ref)]);
    expect((await world.ledger.states.hydrate(T, 'ok')).state.v).toHaveLength(3_000);
  });

  it('refuses to read a state over the budget, from its base or from its deltas', async () => {
    // Written within the budget of the writing process...
    const value = dedupBomb(100_000, '[{},{}]'); // 300,001 JSON values, 4 chunks
    await upload(world, value.chunks);
    const based = compactionWorld(stores, { snapshotEvery: 1 }, manualClock());
    await checkpoint(based, 'based', [refOp('/v', value.ref)]);
    await checkpoint(world, 'replayed', [refOp('/v', value.ref)]);
    expect(await based.ledger.states.hasSnapshot(T, 'based', 1)).toBe(true);
    // ...read by a process whose budget is smaller: refused, whether the state comes from a
    // base snapshot's chunks or from the delta that set it.
    const tight = compactionWorld(
      stores,
      { snapshotEvery: 100, budget: { maxNodes: 100_000, maxBytes: 64 * 1024 * 1024 } },
      manualClock(),
    );
    for (const stream of ['based', 'replayed']) {
      await expect(tight.ledger.states.hydrate(T, stream)).rejects.toMatchObject({
        code: 'ErrPayloadTooLarge',
        overrun: { budget: 'stateNodes', limit: 100_000 },
      });
    }
    const byBytes = compactionWorld(
      stores,
      { snapshotEvery: 100, budget: { maxNodes: 1_000_000, maxBytes: 500_000 } },
      manualClock(),
    );
    await expect(byBytes.ledger.states.hydrate(T, 'based')).rejects.toMatchObject({
      overrun: { budget: 'stateBytes', limit: 500_000 },
    });
    // A checkpoint on such a stream is refused the same way, and writes nothing.
    await expect(
      checkpoint(tight, 'replayed', [{ op: 'set', path: '/n', value: 1 }]),
    ).rejects.toMatchObject({ code: 'ErrPayloadTooLarge' });
    expect((await tight.ledger.appender.readHead(T, 'replayed')).seq).toBe(1);
  });

  it('leaves no reference records behind a ref checkpoint that does not commit', async () => {
    const values = Array.from({ length: 20 }, (_, i) => ({
      i,
      text: `value ${i} `.padEnd(2000, '.'),
    }));
    const refs = [];
    for (const v of values) {
      const { ref, chunks } = chunksOfValue(v);
      await upload(world, chunks);
      refs.push(ref);
    }
    const setAll = refs.map((ref, i) => refOp(`/v${i}`, ref));
    // An op that cannot apply, after 20 refs, on a stream that does not exist.
    await expect(
      checkpoint(world, 'ghost', [...setAll, { op: 'delete', path: '/missing' }]),
    ).rejects.toMatchObject({ code: 'ErrInvalidDelta', opIndex: 20 });
    // A stateDigest that is not what the ops yield.
    await expect(
      checkpoint(world, 'ghost', setAll, { stateDigest: '0'.repeat(64) }),
    ).rejects.toMatchObject({ code: 'ErrDivergenceDetected' });
    expect(await valueRefs(world, 'ghost')).toEqual([]);
    // A commit that fails (a fenced writer) on a stream that exists.
    await checkpoint(world, 'live', [{ op: 'set', path: '/a', value: 1 }]);
    const lease = await world.ledger.leases.acquire(T, 'live', 'w1', 60_000);
    await expect(
      checkpoint(world, 'live', setAll, { fence: lease.epoch + 5 }),
    ).rejects.toMatchObject({ code: 'ErrFenced' });
    expect(await valueRefs(world, 'live')).toEqual([]);
    // The same checkpoint that commits holds each value once.
    await checkpoint(world, 'live', setAll, { fence: lease.epoch });
    expect((await valueRefs(world, 'live')).sort()).toEqual(
      refs.map((r) => `live#value#${r.hash}`).sort(),
    );
  });

  it('answers a ref whose chunks were not all uploaded with ErrInvalidDelta naming the chunk', async () => {
    const value = {
      rows: Array.from({ length: 3000 }, (_, i) => ({ i, body: `row ${i}`.padEnd(500, '-') })),
    };
    const { ref, chunks } = chunksOfValue(value);
    // Every chunk but one inside the tree (the root is there).
    const missing = chunks[1] as Chunk;
    await upload(
      world,
      chunks.filter((c) => c !== missing),
    );
    const err = await checkpoint(world, 's', [
      { op: 'set', path: '/a', value: 1 },
      refOp('/v', ref),
    ]).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ErrInvalidDelta', opIndex: 1, chunk: missing.hash });
    expect((err as Error).message).toContain(missing.hash);
    expect((err as Error).message).not.toMatch(/tamper/i);
    expect((await world.ledger.appender.readHead(T, 's')).seq).toBe(0);
    expect(await valueRefs(world, 's')).toEqual([]);
    await upload(world, [missing]);
    expect((await checkpoint(world, 's', [refOp('/v', ref)])).seq).toBe(1);
  });

  it('applies a 1,000-op checkpoint within the budget, refs and values alike', async () => {
    const doc = { title: 'shared', body: 'x'.repeat(3000), tags: ['a', 'b', 'c'] };
    const { ref, chunks } = chunksOfValue(doc);
    await upload(world, chunks);
    const ops = Array.from({ length: 1000 }, (_, i) =>
      i % 2 === 0 ? refOp(`/d${i}`, ref) : { op: 'set' as const, path: `/n${i}`, value: { i } },
    );
    const r = await checkpoint(world, 'wide', ops);
    expect(r.seq).toBe(1);
    const fresh = compactionWorld(stores, { snapshotEvery: 100 }, manualClock());
    const { state } = await fresh.ledger.states.hydrate(T, 'wide');
    expect(Object.keys(state)).toHaveLength(1000);
    expect(state.d998).toEqual(doc);
    expect(state.n999).toEqual({ i: 999 });
    expect(await valueRefs(world, 'wide')).toEqual([`wide#value#${ref.hash}`]);
  });
});
