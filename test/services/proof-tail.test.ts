import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import { SEGMENT_INDEX_PREFIX, streamPk, tilesKey } from '../../shared/chain/storage-keys.js';
import {
  completedNodeIds,
  completedNodes,
  eventLeafHash,
  MemoryTree,
  verifyConsistency,
  verifyInclusion,
} from '../../shared/domain/merkle/index.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { ProofService } from '../../shared/proofs/proofs.js';
import { PROOF_LEAF_BUDGET } from '../../shared/proofs/tree-source.js';
import { writeTreeTiles } from '../../shared/proofs/tree-tiles.js';
import { batch, compactionWorld, manualClock, type World } from '../support/compaction.js';
import { countingObjects } from '../support/counting.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Proofs do bounded work on the request path however far the compactor's tiles lag
 * (docs/proofs.md, "The untiled tail"): each commit stores, in the segment's index record it
 * writes anyway, the hashes of the subtrees of 16+ leaves its batch completes; a proof past
 * the tiles reads O(log n) of those records and at most a few segments, never the tail. Where
 * no record holds them (records older than this, or merged ones) and a proof would read more
 * than PROOF_LEAF_BUDGET leaves, it is ErrUnavailable with a Retry-After, before reading any.
 * Storage reads are counted through the real adapters.
 */

const unhex = (h: string) => Uint8Array.from(Buffer.from(h, 'hex'));
const TAIL = 1500;
/** Leaves of subtrees below STORED_NODE_LEVEL a proof hashes at most: 16 per side and edge. */
const LOW_LEAVES = 3 * 16;

/** Counts the record queries that read segment index records. */
const countingRecords = (inner: RecordStore) => {
  const counts = { indexQueries: 0 };
  const records = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (pk: string, options?: { skPrefix?: string }) => {
          if (options?.skPrefix === SEGMENT_INDEX_PREFIX) counts.indexQueries++;
          return target.query(pk, options);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { records, counts };
};

describe('completedNodes', () => {
  it('lists exactly the subtrees a batch completes, at the positions completedNodeIds says', () => {
    const tree = new MemoryTree();
    const leaf = (i: number) => eventLeafHash(i.toString(16).padStart(64, '0'));
    let size = 0;
    for (const n of [1, 1, 3, 16, 5, 40, 1, 100, 300]) {
      const leaves = Array.from({ length: n }, (_, i) => leaf(size + i));
      const hashes = completedNodes(tree.frontier(), size, leaves, 4);
      for (const l of leaves) tree.append(l);
      const ids = completedNodeIds(size, size + n, 4);
      expect(hashes.length).toBe(ids.length);
      ids.forEach((id, i) => {
        expect(hashes[i]).toEqual(tree.node(id.level, id.index));
      });
      size += n;
    }
  });
});

describe.each(allStores.filter((f) => f.enabled))('proofs past the tiles on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const clock = manualClock();
  const ring = new KeyRing(new FakeSigner('tail'));

  beforeEach(async () => {
    stores = await factory.make(clock);
    world = compactionWorld(stores, { signing: ring, markEvery: 100_000 }, clock);
  });
  afterEach(() => stores.cleanup());

  const append = async (tenant: string, stream: string, n: number, per: number) => {
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
  /** A proof service over counting wrappers of the real stores. */
  const counted = () => {
    const objects = countingObjects(stores.objects);
    const keys: string[] = [];
    const store = {
      ...objects.store,
      get: (key: string) => {
        keys.push(key);
        return objects.store.get(key);
      },
    };
    const records = countingRecords(stores.records);
    const proofs = new ProofService({
      objects: store,
      records: records.records,
      reader: new Reader({ objects: store, records: records.records }),
      clock,
      signing: ring,
    });
    const reads = () => ({
      tiles: keys.filter((k) => k.includes('/tile/')).length,
      segments: keys.filter((k) => k.includes('/seg/')).length,
      indexQueries: records.counts.indexQueries,
    });
    const reset = () => {
      keys.splice(0);
      records.counts.indexQueries = 0;
    };
    return { proofs, reads, reset };
  };

  it('serves inclusion and consistency proofs on an untiled tail past the budget with bounded reads', {
    timeout: 180_000,
  }, async () => {
    expect(TAIL).toBeGreaterThan(PROOF_LEAF_BUDGET);
    // Batches of 20, 1 and 9: 1,500 events in 150 segments, never tiled.
    await append('acme', 'hot', 1000, 20);
    await append('acme', 'hot', 50, 1);
    await append('acme', 'hot', TAIL - 1050, 9);
    await append('beta', 'hot', 40, 3);
    expect(await stores.records.get(tilesKey('acme', 'hot'))).toBeUndefined();
    const tree = await naive('acme', 'hot');
    const { proofs, reads, reset } = counted();

    for (const seq of [1, 17, 1001, 1024, 1049, 1300, TAIL - 1, TAIL]) {
      reset();
      const p = await proofs.inclusion('acme', 'hot', seq);
      expect(p.treeSize).toBe(TAIL);
      const ok = verifyInclusion(
        tree.node(0, seq - 1),
        seq - 1,
        TAIL,
        p.path.map(unhex),
        tree.root(),
      );
      expect(ok, `seq ${seq}`).toBe(true);
      // O(log n) index records (one per subtree, 2·log2(1500) ≈ 21) and the segments holding
      // the leaves of subtrees under 16 leaves: the 16 around the path and the <16 at the right
      // edge (where batches are of one event, one segment each); on main: all 150 segments.
      expect(reads().segments, `seq ${seq}`).toBeLessThanOrEqual(LOW_LEAVES);
      expect(reads().indexQueries, `seq ${seq}`).toBeLessThanOrEqual(40);
      expect(reads().tiles).toBe(0);
    }
    for (const [from, to] of [
      [700, TAIL],
      [1, 1000],
      [1023, 1499],
      [512, 1024],
    ] as const) {
      reset();
      const c = await proofs.consistency('acme', 'hot', from, to);
      expect(verifyConsistency(from, to, c.path.map(unhex), tree.root(from), tree.root(to))).toBe(
        true,
      );
      expect(reads().segments, `${from}..${to}`).toBeLessThanOrEqual(LOW_LEAVES);
      expect(reads().indexQueries, `${from}..${to}`).toBeLessThanOrEqual(40);
    }
    // Another tenant's stream of the same id has its own records.
    const beta = await proofs.inclusion('beta', 'hot', 40);
    expect(beta.treeSize).toBe(40);
  });

  it('reads no segment for a proof on an untiled tail of one-event segments (their records hold the leaves)', {
    timeout: 180_000,
  }, async () => {
    await append('acme', 'ones', 200, 1);
    const tree = await naive('acme', 'ones');
    const { proofs, reads, reset } = counted();
    for (const seq of [1, 100, 133, 199, 200]) {
      reset();
      const p = await proofs.inclusion('acme', 'ones', seq);
      const leaf = tree.node(0, seq - 1);
      expect(verifyInclusion(leaf, seq - 1, 200, p.path.map(unhex), tree.root())).toBe(true);
      // On main: a segment read per leaf under 16-leaf subtrees (up to LOW_LEAVES of them).
      expect(reads().segments, `seq ${seq}`).toBe(0);
    }
    reset();
    const c = await proofs.consistency('acme', 'ones', 37, 200);
    expect(verifyConsistency(37, 200, c.path.map(unhex), tree.root(37), tree.root())).toBe(true);
    expect(reads().segments).toBe(0);
  });

  it('answers ErrUnavailable with a Retry-After, reading nothing, where no record holds the subtrees; one compactor pass tiles them', {
    timeout: 180_000,
  }, async () => {
    await append('acme', 'old', TAIL, 25);
    // As written before index records held subtrees (or merged): only the segments have them.
    const page = await stores.records.query(streamPk('acme', 'old'), {
      skPrefix: SEGMENT_INDEX_PREFIX,
      limit: 1000,
    });
    for (const item of page.items) {
      await stores.records.update({ pk: item.pk, sk: item.sk }, { remove: ['treeNodes'] });
    }
    const { proofs, reads, reset } = counted();
    for (const call of [
      () => proofs.inclusion('acme', 'old', 5),
      () => proofs.consistency('acme', 'old', 100),
    ]) {
      reset();
      await expect(call()).rejects.toMatchObject({ code: 'ErrUnavailable', retryAfterMs: 30_000 });
      expect(reads().segments).toBe(0);
    }
    // Within the budget it still answers, from the segments.
    reset();
    const tree = await naive('acme', 'old');
    const near = await proofs.consistency('acme', 'old', 600, 1000);
    expect(
      verifyConsistency(600, 1000, near.path.map(unhex), tree.root(600), tree.root(1000)),
    ).toBe(true);
    expect(reads().segments).toBeLessThanOrEqual(Math.ceil(PROOF_LEAF_BUDGET / 25) + 2);

    const report = await world.compactor().compactStream('acme', 'old');
    expect(report.tilesWritten).toBeGreaterThan(0);
    expect(await stores.records.get(tilesKey('acme', 'old'))).toMatchObject({ size: TAIL });
    reset();
    const p = await proofs.inclusion('acme', 'old', 5);
    expect(verifyInclusion(tree.node(0, 4), 4, TAIL, p.path.map(unhex), tree.root())).toBe(true);
    expect(reads().segments).toBe(0);
  });

  it('tiles a large untiled tail in ceil(tail / leaves per pass) passes, each resumable', {
    timeout: 180_000,
  }, async () => {
    await append('acme', 'lag', TAIL, 25);
    const deps = { ...stores, reader: world.ledger.reader };
    // A pass that runs out of time after 4 steps of 256 leaves: 1,024 leaves per pass.
    const pass = async () => {
      let steps = 0;
      return writeTreeTiles(deps, {
        tenant: 'acme',
        stream: 'lag',
        chunk: 256,
        outOfTime: () => steps++ >= 4,
      });
    };
    const sizes: number[] = [];
    for (let i = 0; i < 10; i++) {
      const result = await pass();
      sizes.push(result.size);
      if (!result.partial) break;
    }
    expect(sizes).toEqual([1024, TAIL]);
  });
});
