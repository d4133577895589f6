import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeltaOp } from '../../shared/domain/state.js';
import { type Chunk, memoryOf } from '../../shared/domain/state-v2/index.js';
import { MemoryPool } from '../../shared/state/memory-pool.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { dedupBomb } from '../support/dedup-bomb.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 21 item 3, the process's memory ceiling (memory-pool.ts): requests each within the
 * work budget, but together over the ceiling, do not all build their states at once. Past the
 * ceiling they wait their turn, or are refused with 503 ErrUnavailable and a Retry-After, and
 * the process goes on serving; the pool never lends more than it has.
 */

vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';

const refOp = (path: string, ref: { hash: string; size: number }) =>
  ({ op: 'set', path, ref }) as unknown as DeltaOp;

/** 60,001 JSON values in 4 chunks: about 20 MB materialised (memoryOf). */
const VALUE = dedupBomb(20_000, '[{},{}]');
const ONE = memoryOf({ nodes: 60_002, bytes: VALUE.ref.size + 8 });

describe.each(allStores.filter((f) => f.enabled))('the memory ceiling on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  /** A world whose process has room for one such state and a half. */
  const worldWith = (maxWaitMs: number) => {
    const memory = new MemoryPool({ capacity: Math.floor(ONE * 1.5), maxWaitMs });
    return { memory, world: compactionWorld(stores, { snapshotEvery: 1, memory }, manualClock()) };
  };
  const upload = async (w: World, chunks: Chunk[]) => {
    for (const c of chunks) await w.ledger.states.values.putChunk(T, c.hash, c.bytes);
  };
  const setValue = (w: World, memory: MemoryPool, stream: string) =>
    memory.run(async (account) => {
      const { stateDigest } = await w.ledger.appender.readHead(T, stream);
      return w.ledger.checkpoints.checkpoint({
        tenant: T,
        stream,
        ops: [refOp('/v', VALUE.ref)],
        baseDigest: stateDigest,
        memory: account,
      });
    });
  const read = (w: World, memory: MemoryPool, stream: string) =>
    memory.run((account) => w.ledger.states.hydrate(T, stream, undefined, { memory: account }));

  it('makes concurrent reads past the ceiling wait their turn, all answered', async () => {
    const { memory, world } = worldWith(60_000);
    await upload(world, VALUE.chunks);
    await setValue(world, memory, 'big');
    // The pool is full while the four reads arrive, so each must wait (on a slow store a read
    // could otherwise finish before the next one asks, and wait for nothing).
    const blocker = memory.open();
    await memory.charge(blocker, memory.capacity);
    const pending = Promise.all(Array.from({ length: 4 }, () => read(world, memory, 'big')));
    await vi.waitFor(() => expect(memory.stats.waited).toBeGreaterThanOrEqual(4), {
      timeout: 50_000,
      interval: 20,
    });
    blocker.end();
    const reads = await pending;
    for (const r of reads) expect(r.state.v).toHaveLength(20_000);
    const { stats } = memory;
    expect(stats.waited).toBeGreaterThanOrEqual(4);
    expect(stats.refused).toBe(0);
    expect(stats.peak).toBeLessThanOrEqual(memory.capacity);
    expect(stats.requests).toBe(0);
  });

  it('refuses the reads past the ceiling with 503 and Retry-After, and goes on serving', async () => {
    const { memory, world } = worldWith(0);
    await upload(world, VALUE.chunks);
    await setValue(world, memory, 'big');
    // The pool is full while the reads arrive (as when another request holds it): none waits.
    const blocker = memory.open();
    await memory.charge(blocker, memory.capacity);
    const results = await Promise.allSettled(
      Array.from({ length: 4 }, () => read(world, memory, 'big')),
    );
    blocker.end();
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(refused).toHaveLength(4);
    for (const err of refused) {
      expect(err).toMatchObject({ code: 'ErrUnavailable', retryAfterMs: expect.any(Number) });
    }
    expect(memory.stats.refused).toBe(4);
    expect(memory.stats.peak).toBeLessThanOrEqual(memory.capacity);
    // Nothing is left held, and the next read is served.
    expect(memory.stats.requests).toBe(0);
    expect((await read(world, memory, 'big')).state.v).toHaveLength(20_000);
  });

  it('lets concurrent checkpoints setting large values take turns, and evicts warm states for them', async () => {
    const { memory, world } = worldWith(60_000);
    await upload(world, VALUE.chunks);
    const streams = ['a', 'b', 'c'];
    const blocker = memory.open();
    await memory.charge(blocker, memory.capacity);
    const pending = Promise.all(streams.map((s) => setValue(world, memory, s)));
    await vi.waitFor(() => expect(memory.stats.waited).toBeGreaterThanOrEqual(3), {
      timeout: 50_000,
      interval: 20,
    });
    blocker.end();
    const written = await pending;
    for (const w of written) expect(w.seq).toBe(1);
    expect(memory.stats.peak).toBeLessThanOrEqual(memory.capacity);
    // The warm states they left are the pool's, and give way to the next request.
    expect(memory.stats.caches).toBeGreaterThan(0);
    expect((await read(world, memory, 'a')).state.v).toHaveLength(20_000);
    expect(memory.stats.peak).toBeLessThanOrEqual(memory.capacity);
    expect(memory.stats.requests).toBe(0);
  });
});
