import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toHead } from '../../shared/chain/layout.js';
import { Reader } from '../../shared/chain/reader.js';
import { headKey, tileKey, tilesKey } from '../../shared/chain/storage-keys.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import {
  eventLeafHash,
  hashToHex,
  MemoryTree,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/domain/merkle/index.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { ProofService } from '../../shared/proofs/proofs.js';
import { writeTreeTiles } from '../../shared/proofs/tree-tiles.js';
import {
  batch,
  compactionWorld,
  keysUnder,
  manualClock,
  settle,
  type World,
} from '../support/compaction.js';
import { countingObjects } from '../support/counting.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The compactor's tree step (tree-tiles.ts): tiles written for the head's tree so a proof
 * reads O(log n) tiles and at most the segments appended since, never the whole stream; the
 * backfill of streams written before trees (resumable); tampered tiles and frontiers caught.
 * Object reads are counted through the port.
 */

const unhex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));

describe.each(allStores.filter((f) => f.enabled))('tree tiles on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const clock = manualClock();
  const ring = new KeyRing(new FakeSigner('tiles'));

  beforeEach(async () => {
    stores = await factory.make(clock);
    world = compactionWorld(stores, { signing: ring, markEvery: 1000 }, clock);
  });
  afterEach(() => stores.cleanup());

  const append = async (tenant: string, stream: string, n: number, per = 110) => {
    for (let done = 0; done < n; done += per) {
      clock.advance(10);
      await world.ledger.appender.append({
        tenant,
        stream,
        events: batch(`${stream}-${done}`, Math.min(per, n - done)),
      });
    }
  };
  const naive = async (tenant: string, stream: string) => {
    const tree = new MemoryTree();
    for (let from = 1; ; ) {
      const page = await world.ledger.reader.readEvents(tenant, stream, { from, limit: 1000 });
      for (const e of page.events) tree.append(eventLeafHash(e.hash));
      if (page.next === undefined) return tree;
      from = page.next;
    }
  };
  /** A proof service whose object reads are counted, by kind of object. */
  const counted = () => {
    const counting = countingObjects(stores.objects);
    const keys: string[] = [];
    const objects = {
      ...counting.store,
      get: (key: string) => {
        keys.push(key);
        return counting.store.get(key);
      },
    };
    const proofs = new ProofService({
      objects,
      records: stores.records,
      reader: new Reader({ objects, records: stores.records }),
      clock,
      signing: ring,
    });
    const reads = () => ({
      tiles: keys.filter((k) => k.includes('/tile/')).length,
      segments: keys.filter((k) => k.includes('/seg/')).length,
    });
    return { proofs, reads, reset: () => keys.splice(0) };
  };

  it('a proof on a 1,000+-event stream reads a bounded number of tiles and no segment once tiled', async () => {
    await append('acme', 'big', 1100);
    await append('beta', 'big', 300);
    for (const [tenant, stream] of [
      ['acme', 'big'],
      ['beta', 'big'],
    ] as const) {
      const report = await world.compactor().compactStream(tenant, stream);
      expect(report.tilesWritten).toBeGreaterThan(0);
    }
    const { proofs, reads, reset } = counted();
    const tree = await naive('acme', 'big');
    for (const seq of [1, 256, 257, 700, 1100]) {
      reset();
      const p = await proofs.inclusion('acme', 'big', seq);
      expect(p.treeSize).toBe(1100);
      expect(
        verifyInclusion(tree.node(0, seq - 1), seq - 1, 1100, p.path.map(unhex), tree.root()),
      ).toBe(true);
      // One tile per level (levels 0 and 1) plus the right edge's partial tiles.
      expect(reads()).toEqual({ tiles: expect.any(Number), segments: 0 });
      expect(reads().tiles).toBeLessThanOrEqual(4);
    }
    reset();
    const c = await proofs.consistency('acme', 'big', 300);
    expect(verifyConsistency(300, 1100, c.path.map(unhex), tree.root(300), tree.root())).toBe(true);
    expect(reads().segments).toBe(0);
    expect(reads().tiles).toBeLessThanOrEqual(5);

    // Appends since the compactor's visit: only the segment of the untiled tail is read.
    await append('acme', 'big', 7, 7);
    reset();
    const tail = await proofs.inclusion('acme', 'big', 1103);
    const after = await naive('acme', 'big');
    expect(
      verifyInclusion(after.node(0, 1102), 1102, 1107, tail.path.map(unhex), after.root()),
    ).toBe(true);
    expect(reads().segments).toBeLessThanOrEqual(1);
    expect(reads().tiles).toBeLessThanOrEqual(4);
    // The other tenant's stream of the same name has a tree of its own.
    const beta = await proofs.inclusion('beta', 'big', 300);
    expect(beta.treeSize).toBe(300);
  });

  it('refuses to serve a proof from tampered tile bytes, and the writer refuses other bytes at a tile key', async () => {
    await append('acme', 'run', 600);
    await world.compactor().compactStream('acme', 'run');
    const key = tileKey('acme', 'run', { level: 0, index: 1, width: 256 });
    await stores.tamper(key, (b) => {
      b[5] = (b[5] as number) ^ 1;
      return b;
    });
    const { proofs } = counted();
    await expect(proofs.inclusion('acme', 'run', 300)).rejects.toBeInstanceOf(TamperedLedgerError);
    await expect(proofs.consistency('acme', 'run', 260)).rejects.toMatchObject({
      code: 'ErrTamperedLedger',
    });
    // Proofs that do not touch the tampered tile still verify.
    await expect(proofs.inclusion('acme', 'run', 3)).resolves.toMatchObject({ treeSize: 600 });
    // Rewriting the tiles from scratch meets the tampered bytes: the writer stops.
    await stores.records.delete(tilesKey('acme', 'run'));
    await expect(
      writeTreeTiles({ ...stores, reader: world.ledger.reader }, { tenant: 'acme', stream: 'run' }),
    ).rejects.toBeInstanceOf(TamperedLedgerError);
  });

  it("stops at a head whose frontier is not the tree of the stream's events", async () => {
    await append('acme', 'run', 40);
    const item = await stores.records.get(headKey('acme', 'run'));
    const frontier = [...(toHead(item ?? expect.fail('no head')).frontier ?? [])];
    frontier[0] = hashToHex(eventLeafHash('00'.repeat(32)));
    await stores.records.update(headKey('acme', 'run'), { set: { frontier } });
    await expect(
      writeTreeTiles({ ...stores, reader: world.ledger.reader }, { tenant: 'acme', stream: 'run' }),
    ).rejects.toBeInstanceOf(TamperedLedgerError);
    expect(await stores.records.get(tilesKey('acme', 'run'))).toBeUndefined();
  });

  it('backfills a stream written before trees, resumably, and appends then keep its tree', async () => {
    await append('acme', 'old', 700);
    await append('beta', 'old', 30);
    const strip = { remove: ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'] };
    await stores.records.update(headKey('acme', 'old'), strip);
    await stores.records.update(headKey('beta', 'old'), strip);
    const { proofs } = counted();
    await expect(proofs.treeHead('acme', 'old')).rejects.toMatchObject({
      code: 'ErrNotFound',
    });
    // Out of time after the first chunk of 256 leaves: the rest is left for the next run.
    let steps = 0;
    const deps = { ...stores, reader: world.ledger.reader };
    const first = await writeTreeTiles(deps, {
      tenant: 'acme',
      stream: 'old',
      chunk: 256,
      outOfTime: () => steps++ > 0,
    });
    expect(first).toMatchObject({ size: 256, partial: true, backfilled: false });
    expect(await stores.records.get(tilesKey('acme', 'old'))).toMatchObject({ size: 256 });
    const rest = await writeTreeTiles(deps, { tenant: 'acme', stream: 'old', chunk: 256 });
    expect(rest).toMatchObject({ size: 700, backfilled: true, partial: false });
    const report = await world.compactor().compactStream('beta', 'old');
    expect(report.treesBackfilled).toBe(1);
    for (const [tenant, size] of [
      ['acme', 700],
      ['beta', 30],
    ] as const) {
      const tree = await naive(tenant, 'old');
      const head = toHead((await stores.records.get(headKey(tenant, 'old'))) ?? expect.fail());
      expect(head).toMatchObject({ treeBase: 0, treeSize: size });
      expect(head.frontier).toEqual(tree.frontier().map(hashToHex));
    }
    await append('acme', 'old', 5, 5);
    const tree = await naive('acme', 'old');
    const signed = await proofs.treeHead('acme', 'old');
    expect(signed).toMatchObject({ treeSize: 705, rootHash: hashToHex(tree.root()) });
    const p = await proofs.inclusion('acme', 'old', 2);
    expect(verifyInclusion(tree.node(0, 1), 1, 705, p.path.map(unhex), tree.root())).toBe(true);
  });

  it('starts the tree of a stream pruned before it had one at the pruning point (treeBase)', async () => {
    for (let i = 0; i < 8; i++) {
      await append('acme', 'pruned', 2, 2);
      clock.advance(1000);
    }
    clock.advance(86_400_000);
    await append('acme', 'pruned', 4, 4);
    await world.ledger.retention.set('acme', 'pruned', { pruneAfterMs: 86_400_000 });
    await settle(world, (ms) => clock.advance(ms));
    const pruned = toHead((await stores.records.get(headKey('acme', 'pruned'))) ?? expect.fail());
    expect(pruned.prunedSeq).toBe(16);
    // As if written before trees: no tree fields, no tiles.
    await stores.records.update(headKey('acme', 'pruned'), {
      remove: ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'],
    });
    await stores.records.delete(tilesKey('acme', 'pruned'));
    for (const key of await keysUnder(stores.objects, 't/acme/s/pruned/tile/')) {
      await stores.objects.delete(key);
    }
    const result = await writeTreeTiles(
      { ...stores, reader: world.ledger.reader },
      { tenant: 'acme', stream: 'pruned' },
    );
    expect(result).toMatchObject({ backfilled: true, size: 4 });
    const head = toHead((await stores.records.get(headKey('acme', 'pruned'))) ?? expect.fail());
    expect(head).toMatchObject({ treeBase: 16, treeSize: 4 });
    const tree = new MemoryTree();
    const page = await world.ledger.reader.readEvents('acme', 'pruned', { from: 17 });
    for (const e of page.events) tree.append(eventLeafHash(e.hash));
    expect(head.frontier).toEqual(tree.frontier().map(hashToHex));
    await append('acme', 'pruned', 1, 1);
    const { proofs } = counted();
    const signed = await proofs.treeHead('acme', 'pruned');
    expect(signed).toMatchObject({ treeBase: 16, treeSize: 5 });
    const p = await proofs.inclusion('acme', 'pruned', 17);
    expect(p.leafIndex).toBe(0);
    await expect(proofs.inclusion('acme', 'pruned', 16)).rejects.toMatchObject({
      code: 'ErrPruned',
    });
  });
});
