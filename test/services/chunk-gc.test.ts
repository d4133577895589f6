import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { chunkGcKey, chunkPrefix } from '../../shared/chain/storage-keys.js';
import type { ChunkGcStep } from '../../shared/compaction/chunk-gc.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import type { SnapshotStep } from '../../shared/state/snapshot-v2.js';
import { meteredObjects } from '../support/chunk-world.js';
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
 * Issue 12: forks write no chunk, and chunks are collected by references, not by age: after
 * the grace, the compactor deletes the chunks no base, fork origin or pruning point reaches,
 * safe against a writer that deduplicated against a condemned chunk, a fork meanwhile, a
 * writer whose knowledge predates a sweep, and a crash between any two steps of either side.
 */

// Megabytes of state through the emulators on a shared machine.
vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';

const messages = (n: number, tag = 'm') =>
  Array.from({ length: n }, (_, i) => ({ i, text: `${tag} ${i} `.padEnd(1000, '.') }));

describe.each(allStores.filter((f) => f.enabled))('chunk GC on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;
  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, { snapshotEvery: 1 }, clock);
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const put = (w: World, stream: string, ops: DeltaOp[]) =>
    w.ledger.appender
      .readHead(T, stream)
      .then(({ stateDigest }) =>
        w.ledger.checkpoints.checkpoint({ tenant: T, stream, ops, baseDigest: stateDigest }),
      );
  /** A new process over the same stores (empty caches), same clock. */
  const process = (settings = {}) =>
    compactionWorld(stores, { snapshotEvery: 1, ...settings }, clock);
  const chunks = () => keysUnder(stores.objects, chunkPrefix(T));
  /** Compactor runs with the clock past grace and lease between them. */
  const compact = async (w: World = world, runs = 6, options = {}) => {
    for (let i = 0; i < runs; i++) {
      clock.advance(GRACE + 2 * LEASE);
      await w.compactor(options).run();
    }
  };
  const deleteStream = async (stream: string) => {
    await world.ledger.streamDeleter.delete(T, stream);
  };
  const hydrates = async (stream: string) =>
    (await process().ledger.states.hydrate(T, stream)).state;

  it('a fork of a 5 MiB state writes under 1 KiB and no chunk; it hydrates alone', async () => {
    const big = { messages: messages(5200) };
    await put(world, 'src', [{ op: 'set', path: '/messages', value: big.messages }]);
    const metered = meteredObjects(stores.objects);
    const w = compactionWorld({ ...stores, objects: metered.store }, { snapshotEvery: 1 }, clock);
    await w.ledger.states.hydrate(T, 'src'); // the forking process reads the source
    metered.reset();
    await w.ledger.checkpoints.fork({ tenant: T, source: 'src', at: 1, newStreamId: 'f' });
    expect(metered.putKeys.filter((k) => k.includes('/chunks/'))).toEqual([]);
    expect(metered.m.putBytes).toBeLessThan(1024);
    await deleteStream('src');
    await compact();
    expect(await hydrates('f')).toEqual(big);
  });

  it('deletes the chunks nothing references after the grace, keeps shared ones', async () => {
    await put(world, 'a', [{ op: 'set', path: '/m', value: messages(200, 'a') }]);
    await put(world, 'b', [{ op: 'set', path: '/m', value: messages(200, 'a') }]);
    await put(world, 'b', [{ op: 'set', path: '/n', value: messages(100, 'b') }]);
    await put(world, 'c', [{ op: 'set', path: '/z', value: messages(100, 'c') }]);
    const all = (await chunks()).length;
    await deleteStream('c');
    await compact(world, 1); // deletes the stream, releases its references, condemns
    expect((await chunks()).length).toBe(all); // not before the grace
    await compact(world, 3);
    const left = await chunks();
    expect(left.length).toBeLessThan(all);
    expect(await hydrates('b')).toMatchObject({ n: messages(100, 'b') });
    expect(await hydrates('a')).toEqual({ m: messages(200, 'a') });
    // What is left is exactly what the references reach: nothing more to condemn.
    const gc = await world.compactor().chunkGc.run(T);
    expect(gc).toMatchObject({ phase: 'idle', condemned: 0 });
  });

  it('keeps a condemned chunk a writer deduplicated against (put-if-absent does not refresh)', async () => {
    const value = messages(150, 'x');
    await put(world, 'old', [{ op: 'set', path: '/m', value }]);
    await deleteStream('old');
    await compact(world, 1);
    const marker = await stores.records.get(chunkGcKey(T));
    expect(marker?.condemnedKey).toBeDefined(); // old's chunks are condemned now
    // A new stream sets the same value: its base finds every chunk stored, writes none.
    const metered = meteredObjects(stores.objects);
    const w = compactionWorld({ ...stores, objects: metered.store }, { snapshotEvery: 1 }, clock);
    await put(w, 'new', [{ op: 'set', path: '/m', value }]);
    // …and a fork of it, meanwhile.
    await w.ledger.checkpoints.fork({ tenant: T, source: 'new', at: 1, newStreamId: 'nf' });
    await compact(world, 3);
    expect(await hydrates('new')).toEqual({ m: value });
    expect(await hydrates('nf')).toEqual({ m: value });
  });

  it('a writer whose knowledge predates a sweep writes its chunks again', async () => {
    await put(world, 's', [{ op: 'set', path: '/m', value: messages(150, 's') }]);
    // The base's reference goes (as retention would release it) and a GC sweeps its chunks.
    await world.ledger.states.chunks.releaseRef(T, { stream: 's', kind: 'base', id: 1 });
    await stores.records.put({ pk: 'chunkgc-due', sk: T, dueAt: 0 });
    await compact(world, 3);
    expect(await chunks()).toEqual([]);
    // The same process still believes them stored; its next base must not skip them.
    await put(world, 's', [{ op: 'set', path: '/t', value: 1 }]);
    expect(await hydrates('s')).toMatchObject({ t: 1 });
  });

  const writerSteps: SnapshotStep[] = ['ref-written', 'chunks-written', 'root-written'];
  for (const step of writerSteps) {
    it(`a base writer that dies after ${step} leaves nothing the GC or readers trip on`, async () => {
      await put(world, 'w', [{ op: 'set', path: '/m', value: messages(120, 'w') }]);
      const dying = process({
        snapshotCrash: (at: SnapshotStep) => {
          if (at === step) throw new CrashInjectedError(at);
        },
      });
      await put(dying, 'w', [{ op: 'set', path: '/n', value: messages(80, 'n') }]);
      // The GC meanwhile: it sees a young reference without its root and deletes nothing.
      await world.compactor().chunkGc.run(T);
      await compact(process(), 6);
      expect(await hydrates('w')).toMatchObject({ n: messages(80, 'n') });
      const fresh = process();
      expect(await fresh.ledger.verifier.verify(T, 'w')).toMatchObject({ ok: true, seq: 2 });
      expect(await fresh.compactor().chunkGc.run(T)).toMatchObject({ condemned: 0 });
    });
  }

  const gcSteps: ChunkGcStep[] = [
    'chunks-condemned',
    'sweep-started',
    'chunks-deleted',
    'sweep-done',
  ];
  for (const step of gcSteps) {
    it(`a GC that dies after ${step} is finished by the next, writers wait, nothing live goes`, async () => {
      await put(world, 'keep', [{ op: 'set', path: '/m', value: messages(120, 'k') }]);
      await put(world, 'gone', [{ op: 'set', path: '/m', value: messages(120, 'g') }]);
      const before = (await chunks()).length;
      await deleteStream('gone');
      const crash = (at: ChunkGcStep) => {
        if (at === step) throw new CrashInjectedError(at);
      };
      let crashed = false;
      for (let i = 0; i < 6 && !crashed; i++) {
        clock.advance(GRACE + 2 * LEASE);
        await world
          .compactor({ chunkCrash: crash })
          .run()
          .catch((err: unknown) => {
            if (!(err instanceof CrashInjectedError)) throw err;
            crashed = true;
          });
      }
      expect(crashed).toBe(true);
      // A writer right after the crash: refused while a sweep is marked, fine otherwise.
      await put(world, 'keep', [{ op: 'set', path: '/k2', value: messages(20, 'k2') }]).catch(
        () => undefined,
      );
      await compact(process(), 6);
      const after = (await chunks()).length;
      expect(after).toBeLessThan(before);
      expect((await hydrates('keep')).m).toEqual(messages(120, 'k'));
      const marker = await stores.records.get(chunkGcKey(T));
      expect(Number(marker?.gen) % 2).toBe(0);
    });
  }
});
