import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { chunkPrefix } from '../../shared/chain/storage-keys.js';
import { InvalidInputError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { chunksOfValue, DEFAULT_WORK_BUDGET } from '../../shared/domain/state-v2/index.js';
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
 * Issue 22: a pending write too large for a request goes by ref (uploaded as chunks first, as
 * a checkpoint's set op does). The write holds the chunks for its stream against the chunk
 * GC, as a checkpoint's ref does: they outlive the upload reference's day, while chunks
 * nothing references are collected.
 */

vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';
const S = 'lg.thread';
const DAY = 86_400_000;

/** ~900 KiB: a long string and some records. */
const bigWrite = (tag: string) => ({
  t: tag,
  text: 'w'.repeat(800 * 1024),
  rows: Array.from({ length: 100 }, (_, i) => ({ i, body: `${tag} ${i} `.padEnd(1000, '-') })),
});

describe.each(allStores.filter((f) => f.enabled))('pending writes by ref on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const upload = async (value: unknown) => {
    const { ref, chunks } = chunksOfValue(value as never);
    for (const c of chunks) await world.ledger.states.values.putChunk(T, c.hash, c.bytes);
    return ref;
  };
  const labelled = async (label: string) => {
    const { stateDigest } = await world.ledger.appender.readHead(T, S);
    const ops: DeltaOp[] = [{ op: 'set', path: '/n', value: 1 }];
    await world.ledger.checkpoints.checkpoint({
      tenant: T,
      stream: S,
      ops,
      baseDigest: stateDigest,
      label,
    });
  };
  /** The value of a ref, read (and verified) from the tenant's chunks. */
  const readRef = async (ref: { hash: string; size: number }) => {
    const op = { op: 'set', path: '/v', ref } as unknown as DeltaOp;
    const { values } = world.ledger.states;
    const measured = await values.measureRefs(T, [op], { budget: DEFAULT_WORK_BUDGET });
    const { resolve } = await values.readRefs(T, [op], measured);
    return resolve(ref)?.node.value;
  };

  it('keeps the chunks a pending write names past the upload TTL, and the GC takes the others', async () => {
    await labelled('c1');
    const kept = bigWrite('kept');
    const ref = await upload(kept);
    const stray = await upload(bigWrite('stray'));
    const put = await world.ledger.pendingWrites.put(T, S, 'c1', {
      taskId: 'task-1',
      taskPath: '',
      writes: [
        { idx: 0, channel: 'big', ref },
        { idx: 1, channel: 'small', value: 'inline' },
      ],
    });
    expect(put.written).toBe(2);

    // Past the upload references' day, then GC visits (condemn, sweep) a grace apart.
    await stores.records.put({ pk: 'chunkgc-due', sk: T, dueAt: 0 });
    clock.advance(2 * DAY);
    for (let i = 0; i < 4; i++) {
      clock.advance(GRACE + 2 * LEASE);
      await world.compactor().chunkGc.run(T);
    }

    const chunks = new Set(await keysUnder(stores.objects, chunkPrefix(T)));
    expect(chunks.has(`${chunkPrefix(T)}${ref.hash}`)).toBe(true);
    expect(chunks.has(`${chunkPrefix(T)}${stray.hash}`)).toBe(false);
    const writes = await world.ledger.pendingWrites.list(T, S, 'c1');
    expect(writes.map(({ channel, value, ref: r }) => ({ channel, value, ref: r }))).toEqual([
      { channel: 'big', value: undefined, ref },
      { channel: 'small', value: 'inline', ref: undefined },
    ]);
    expect(await readRef(ref)).toEqual(kept);
  });

  it('refuses a ref whose chunks were not uploaded, or with both value and ref, writing nothing', async () => {
    await labelled('c1');
    const { ref } = chunksOfValue(bigWrite('never uploaded') as never);
    const write = (w: { idx: number; channel: string; value?: string; ref?: typeof ref }) =>
      world.ledger.pendingWrites.put(T, S, 'c1', { taskId: 't', taskPath: '', writes: [w] });

    await expect(write({ idx: 0, channel: 'big', ref })).rejects.toThrow(InvalidInputError);
    await expect(write({ idx: 0, channel: 'big', ref, value: 'x' })).rejects.toThrow(
      /exactly one of value and ref/,
    );
    await expect(write({ idx: 0, channel: 'big', ref: { ...ref, size: 0 } })).rejects.toThrow(
      InvalidInputError,
    );
    expect(await world.ledger.pendingWrites.list(T, S, 'c1')).toEqual([]);
  });
});
