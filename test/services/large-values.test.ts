import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { chunkPrefix } from '../../shared/chain/storage-keys.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { InvalidInputError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { chunksOfValue, MAX_CHUNK_BYTES } from '../../shared/domain/state-v2/index.js';
import { MAX_UPLOAD_BYTES } from '../../shared/state/values.js';
import {
  compactionWorld,
  GRACE,
  keysUnder,
  LEASE,
  type ManualClock,
  manualClock,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 12, large values: a value far larger than a request is uploaded as chunks (each one
 * checked against its hash), then set by a checkpoint op that names it by ref. It is stored as
 * chunks only (no object near S3's or DynamoDB's limits), the delta keeps the ref, hydration
 * reads it back from the chunks, and the stream's reference keeps them from the GC.
 */

vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';
const DAY = 86_400_000;

/** ~3 MiB: a long string (6 pages of 512 KiB) and 1,500 records of 1 KiB. */
const bigValue = () => ({
  text: 'x'.repeat(3 * 512 * 1024 + 100),
  rows: Array.from({ length: 1500 }, (_, i) => ({ i, body: `row ${i} `.padEnd(1000, '-') })),
});

describe.each(allStores.filter((f) => f.enabled))('large values on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, { snapshotEvery: 2 }, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const checkpoint = async (w: World, stream: string, ops: DeltaOp[]) => {
    const { stateDigest } = await w.ledger.appender.readHead(T, stream);
    return w.ledger.checkpoints.checkpoint({ tenant: T, stream, ops, baseDigest: stateDigest });
  };
  const upload = async (w: World, value: unknown) => {
    const { ref, chunks } = chunksOfValue(value as never);
    for (const c of chunks) await w.ledger.states.values.putChunk(T, c.hash, c.bytes);
    return ref;
  };
  const refOp = (path: string, ref: { hash: string; size: number }) =>
    ({ op: 'set', path, ref }) as unknown as DeltaOp;

  it('sets a value by ref: stored as chunks only, read back whole, kept past the upload TTL', async () => {
    // No base snapshot: hydration replays the delta, whose ref only the stream's reference keeps.
    world = compactionWorld(stores, { snapshotEvery: 100 }, clock);
    const value = bigValue();
    const ref = await upload(world, value);
    expect(ref.size).toBe(canonicalJson(value).length);
    await checkpoint(world, 'docs', [{ op: 'set', path: '/title', value: 'report' }]);
    const r = await checkpoint(world, 'docs', [refOp('/doc', ref)]);
    expect(r.seq).toBe(2);
    // The delta records the ref, not the value.
    const [event] = (await world.ledger.reader.readEvents(T, 'docs', { from: 2, limit: 1 })).events;
    expect(event?.payload).toMatchObject({ v: 2, ops: [{ op: 'set', path: '/doc', ref }] });
    for (const key of await keysUnder(stores.objects, `t/${T}/`)) {
      const size = (await stores.objects.head(key))?.size ?? 0;
      expect(size, key).toBeLessThanOrEqual(MAX_UPLOAD_BYTES);
    }
    await checkpoint(world, 'docs', [{ op: 'set', path: '/n', value: 3 }]);
    // A new process, after the GC, reads the value from the chunks the delta names.
    clock.advance(2 * DAY); // past the upload references' TTL
    for (let i = 0; i < 4; i++) {
      clock.advance(GRACE + 2 * LEASE);
      await world.compactor().chunkGc.run(T);
    }
    const fresh = compactionWorld(stores, { snapshotEvery: 100 }, clock);
    expect((await fresh.ledger.states.hydrate(T, 'docs', 2)).state).toEqual({
      title: 'report',
      doc: value,
    });
    expect((await fresh.ledger.states.hydrate(T, 'docs')).state).toMatchObject({ n: 3 });
    expect(await fresh.ledger.verifier.verify(T, 'docs')).toMatchObject({ ok: true });
  });

  it('refuses a ref whose chunks were not uploaded, a wrong size, or a value over the limit', async () => {
    const value = bigValue();
    const { ref, chunks } = chunksOfValue(value as never);
    // Every chunk but the root: the ref names a chunk that is not there (the caller's, 422).
    for (const c of chunks.slice(0, -1))
      await world.ledger.states.values.putChunk(T, c.hash, c.bytes);
    await expect(checkpoint(world, 's', [refOp('/v', ref)])).rejects.toMatchObject({
      code: 'ErrInvalidDelta',
      chunk: ref.hash,
    });
    const root = chunks.at(-1);
    if (root) await world.ledger.states.values.putChunk(T, root.hash, root.bytes);
    await expect(
      checkpoint(world, 's', [refOp('/v', { hash: ref.hash, size: ref.size + 1 })]),
    ).rejects.toBeInstanceOf(InvalidInputError);
    const small = compactionWorld(stores, { snapshotEvery: 2, maxValueBytes: 1024 * 1024 }, clock);
    await expect(checkpoint(small, 's', [refOp('/v', ref)])).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    expect((await world.ledger.appender.readHead(T, 's')).seq).toBe(0);
    expect((await checkpoint(world, 's', [refOp('/v', ref)])).seq).toBe(1);
  });

  it('refuses an upload whose bytes are not its hash, or larger than a chunk', async () => {
    const { chunks } = chunksOfValue(bigValue() as never);
    const [c] = chunks;
    if (!c) throw new Error('no chunk');
    const bad = Uint8Array.from(c.bytes);
    bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 1;
    await expect(world.ledger.states.values.putChunk(T, c.hash, bad)).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    await expect(
      world.ledger.states.values.putChunk(T, c.hash, new Uint8Array(MAX_CHUNK_BYTES + 65)),
    ).rejects.toBeInstanceOf(InvalidInputError);
    expect(await keysUnder(stores.objects, chunkPrefix(T))).toEqual([]);
  });

  it('lets the GC take uploads no checkpoint referenced after their TTL', async () => {
    await upload(world, bigValue());
    expect((await keysUnder(stores.objects, chunkPrefix(T))).length).toBeGreaterThan(0);
    await stores.records.put({ pk: 'chunkgc-due', sk: T, dueAt: 0 });
    clock.advance(2 * DAY);
    for (let i = 0; i < 4; i++) {
      clock.advance(GRACE + 2 * LEASE);
      await world.compactor().run();
    }
    expect(await keysUnder(stores.objects, chunkPrefix(T))).toEqual([]);
  });
});
