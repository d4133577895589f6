import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import { SEGMENT_INDEX_PREFIX, tileKey, tilesKey } from '../../shared/chain/storage-keys.js';
import { ConflictError, CrashInjectedError } from '../../shared/domain/errors.js';
import {
  emptyEdge,
  encodeTile,
  eventLeafHash,
  extendTiles,
} from '../../shared/domain/merkle/index.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore, TransactOp } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import {
  TILE_WRITE_CONCURRENCY,
  type TreeTilesVisit,
  writeTreeTiles,
} from '../../shared/proofs/tree-tiles.js';
import {
  batch,
  compactionWorld,
  keysUnder,
  manualClock,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * One pass of the compactor's tree step (tree-tiles.ts, tree-leaves.ts), by the requests it
 * makes: leaves come from the segment index records wherever a record holds them (a segment's
 * last event), so a segment is read only when it holds more than one leaf of a step; tile
 * PUTs are bounded in flight; a pass is bounded in leaves as in time; a pass that dies between
 * tile writes, or before its record moves, is finished by the next; a record moved by someone
 * else is a conflict. Requests are counted through the real adapters.
 */

interface Counts {
  segmentGets: number;
  inFlightGets: number;
  tilePuts: number;
  inFlightPuts: number;
  maxInFlightPuts: number;
  indexQueries: number;
}

interface Faults {
  /** Called before each tile PUT with its number (1-based): 'before' dies first, 'after' loses the reply. */
  tilePut?: (n: number) => 'before' | 'after' | undefined;
  /** Called before each transaction that moves the tiles record. */
  moveRecord?: (n: number) => Promise<void> | void;
}

/** The stores with their tree-step requests counted and faults injected. */
const instrumented = (stores: StorePair, faults: Faults = {}) => {
  const counts: Counts = {
    segmentGets: 0,
    inFlightGets: 0,
    tilePuts: 0,
    inFlightPuts: 0,
    maxInFlightPuts: 0,
    indexQueries: 0,
  };
  let moves = 0;
  const objects: ObjectStore = {
    ...stores.objects,
    get: async (key) => {
      if (!key.includes('/seg/')) return stores.objects.get(key);
      counts.segmentGets++;
      counts.inFlightGets++;
      try {
        return await stores.objects.get(key);
      } finally {
        counts.inFlightGets--;
      }
    },
    head: (key) => stores.objects.head(key),
    list: (prefix, options) => stores.objects.list(prefix, options),
    putIfMatch: (key, body, etag) => stores.objects.putIfMatch(key, body, etag),
    delete: (key) => stores.objects.delete(key),
    putIfAbsent: async (key, body) => {
      if (!key.includes('/tile/')) return stores.objects.putIfAbsent(key, body);
      const n = ++counts.tilePuts;
      const fault = faults.tilePut?.(n);
      if (fault === 'before') throw new CrashInjectedError(`tile put ${n}`);
      counts.inFlightPuts++;
      counts.maxInFlightPuts = Math.max(counts.maxInFlightPuts, counts.inFlightPuts);
      try {
        const result = await stores.objects.putIfAbsent(key, body);
        if (fault === 'after') throw new CrashInjectedError(`reply of tile put ${n}`);
        return result;
      } finally {
        counts.inFlightPuts--;
      }
    },
  };
  const records: RecordStore = {
    get: (key) => stores.records.get(key),
    put: (item, options) => stores.records.put(item, options),
    update: (key, update, options) => stores.records.update(key, update, options),
    delete: (key, options) => stores.records.delete(key, options),
    query: (pk, options) => {
      if (options?.skPrefix === SEGMENT_INDEX_PREFIX) counts.indexQueries++;
      return stores.records.query(pk, options);
    },
    transact: async (ops: TransactOp[]) => {
      const first = ops[0];
      if (first?.kind === 'put' && first.item.sk === 'tiles') await faults.moveRecord?.(++moves);
      return stores.records.transact(ops);
    },
  };
  return { objects, records, counts };
};

/**
 * Segment GETs of steps over these leaf ranges: a segment's last event is in its record, any
 * other leaf of a step needs its bytes.
 */
const expectedGets = (
  segments: ReadonlyArray<[number, number]>,
  steps: ReadonlyArray<[number, number]>,
) => {
  let gets = 0;
  for (const [start, end] of steps) {
    const [from, to] = [start + 1, end];
    for (const [first, last] of segments) {
      if (last >= from && first <= to && Math.max(from, first) !== last) gets++;
    }
  }
  return gets;
};

const stepsOf = (size: number, chunk: number): Array<[number, number]> => {
  const steps: Array<[number, number]> = [];
  for (let start = 0; start < size; start += chunk) {
    steps.push([start, Math.min(size, start + chunk)]);
  }
  return steps;
};

describe.each(allStores.filter((f) => f.enabled))('a tiling pass on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const clock = manualClock();
  const ring = new KeyRing(new FakeSigner('tiles'));

  beforeEach(async () => {
    stores = await factory.make(clock);
    world = compactionWorld(stores, { signing: ring, markEvery: 100_000 }, clock);
  });
  afterEach(() => stores.cleanup());

  /** Appends batches of these sizes; answers each segment's [firstSeq, lastSeq]. */
  const append = async (stream: string, sizes: readonly number[]) => {
    const segments: Array<[number, number]> = [];
    let seq = 0;
    for (const [i, n] of sizes.entries()) {
      clock.advance(10);
      await world.ledger.appender.append({ tenant: 'acme', stream, events: batch(`${i}`, n) });
      segments.push([seq + 1, seq + n]);
      seq += n;
    }
    return segments;
  };
  const pass = (
    deps: { objects: ObjectStore; records: RecordStore },
    stream: string,
    options: Partial<TreeTilesVisit> = {},
  ) =>
    writeTreeTiles({ ...deps, reader: new Reader(deps) }, { tenant: 'acme', stream, ...options });
  /** Every tile of the tree of the stream's events is stored, with the events' hashes. */
  const expectTiles = async (stream: string, size: number) => {
    const events = await world.ledger.reader.readEvents('acme', stream, { limit: 100_000 });
    const leaves = events.events.map((e) => eventLeafHash(e.hash));
    expect(leaves).toHaveLength(size);
    for (const tile of extendTiles(emptyEdge(), leaves).tiles) {
      const stored = await stores.objects.get(tileKey('acme', stream, tile.id));
      expect(stored?.body, JSON.stringify(tile.id)).toEqual(encodeTile(tile.hashes));
    }
    expect(await stores.records.get(tilesKey('acme', stream))).toMatchObject({ size });
  };

  it('tiles a stream appended one event at a time from its index records, reading no segment', {
    timeout: 180_000,
  }, async () => {
    await append(
      'ones',
      Array.from({ length: 300 }, () => 1),
    );
    const { objects, records, counts } = instrumented(stores);
    const result = await pass({ objects, records }, 'ones');
    expect(result).toMatchObject({ size: 300, partial: false });
    expect(counts.segmentGets).toBe(0);
    // 300 records: one query (pages of up to 1,000).
    expect(counts.indexQueries).toBe(1);
    await expectTiles('ones', 300);
  });

  it('reads a segment only when it holds more than one leaf of a step, and then once', {
    timeout: 180_000,
  }, async () => {
    const sizes = Array.from({ length: 60 }, (_, i) => [1, 5, 1, 1, 9, 2, 1, 3][i % 8] as number);
    const segments = await append('mixed', sizes);
    const total = sizes.reduce((a, b) => a + b, 0);
    const chunk = 64;
    const expected = expectedGets(segments, stepsOf(total, chunk));
    const { objects, records, counts } = instrumented(stores);
    const result = await pass({ objects, records }, 'mixed', { chunk });
    expect(result).toMatchObject({ size: total, partial: false });
    expect(counts.segmentGets).toBe(expected);
    expect(expected).toBeLessThan(segments.length);
    await expectTiles('mixed', total);
  });

  it('stops a pass before a step that would take it past maxLeaves; the next pass goes on', {
    timeout: 180_000,
  }, async () => {
    const segments = await append(
      'long',
      Array.from({ length: 14 }, () => 50),
    );
    const { objects, records, counts } = instrumented(stores);
    const first = await pass({ objects, records }, 'long', { chunk: 256, maxLeaves: 600 });
    expect(first).toMatchObject({ size: 512, partial: true });
    // No step read ahead past maxLeaves.
    expect(counts.segmentGets).toBe(expectedGets(segments, stepsOf(512, 256)));
    expect(await stores.records.get(tilesKey('acme', 'long'))).toMatchObject({ size: 512 });
    // At least one step, whatever maxLeaves says.
    const second = await pass(stores, 'long', { chunk: 256, maxLeaves: 1 });
    expect(second).toMatchObject({ size: 700, partial: false });
    await expectTiles('long', 700);
  });

  it("reads a step's leaves while the step before writes its tiles; a pass out of time leaves no read in flight", {
    timeout: 180_000,
  }, async () => {
    const segments = await append(
      'ahead',
      Array.from({ length: 30 }, () => 10),
    );
    let queriesAtFirstMove = 0;
    const { objects, records, counts } = instrumented(stores, {
      // Step 2's read began (its index query is its first request) before step 1's tiles
      // were put and its record moved.
      moveRecord: (n) => {
        if (n === 1) queriesAtFirstMove = counts.indexQueries;
      },
    });
    let checks = 0;
    const result = await pass({ objects, records }, 'ahead', {
      chunk: 100,
      outOfTime: () => ++checks > 2,
    });
    expect(result).toMatchObject({ size: 200, partial: true });
    expect(queriesAtFirstMove).toBe(2);
    // Steps 1 and 2, and step 3 read ahead (unused: the pass was out of time), settled.
    expect(counts.segmentGets).toBe(expectedGets(segments, stepsOf(300, 100)));
    expect(counts.inFlightGets).toBe(0);
    await expect(pass(stores, 'ahead', { chunk: 100 })).resolves.toMatchObject({ size: 300 });
    await expectTiles('ahead', 300);
  });

  it('keeps at most TILE_WRITE_CONCURRENCY tile PUTs in flight', {
    timeout: 180_000,
  }, async () => {
    await append(
      'wide',
      Array.from({ length: 17 }, () => 500),
    );
    const { objects, records, counts } = instrumented(stores);
    // One step of 8,192 leaves: 32 full level-0 tiles and a partial level-1 tile.
    const result = await pass({ objects, records }, 'wide', { chunk: 8192, maxLeaves: 8192 });
    expect(result).toMatchObject({ size: 8192, tilesWritten: 33 });
    expect(counts.maxInFlightPuts).toBe(TILE_WRITE_CONCURRENCY);
  });

  for (const fault of ['before', 'after'] as const) {
    it(`finishes a pass that died ${fault === 'before' ? 'before' : 'after (reply lost)'} a tile write, counting no tile twice`, {
      timeout: 180_000,
    }, async () => {
      await append(
        'crash',
        Array.from({ length: 12 }, () => 50),
      );
      // Step 2 (leaves 256..511) writes two tiles: the second dies.
      const { objects, records } = instrumented(stores, {
        tilePut: (n) => (n === 3 ? fault : undefined),
      });
      await expect(pass({ objects, records }, 'crash', { chunk: 256 })).rejects.toBeInstanceOf(
        CrashInjectedError,
      );
      expect(await stores.records.get(tilesKey('acme', 'crash'))).toMatchObject({ size: 256 });
      const before = (await keysUnder(stores.objects, 't/acme/s/crash/tile/')).length;
      const again = await pass(stores, 'crash', { chunk: 256 });
      const after = (await keysUnder(stores.objects, 't/acme/s/crash/tile/')).length;
      expect(again).toMatchObject({ size: 600, partial: false, tilesWritten: after - before });
      await expectTiles('crash', 600);
    });
  }

  it('writes no tile again after a pass that died before its record moved', {
    timeout: 180_000,
  }, async () => {
    await append(
      'moved',
      Array.from({ length: 12 }, () => 50),
    );
    const { objects, records } = instrumented(stores, {
      moveRecord: (n) => {
        if (n === 2) throw new CrashInjectedError('before the second move');
      },
    });
    await expect(pass({ objects, records }, 'moved', { chunk: 256 })).rejects.toBeInstanceOf(
      CrashInjectedError,
    );
    expect(await stores.records.get(tilesKey('acme', 'moved'))).toMatchObject({ size: 256 });
    const before = (await keysUnder(stores.objects, 't/acme/s/moved/tile/')).length;
    const { objects: o2, records: r2, counts } = instrumented(stores);
    const again = await pass({ objects: o2, records: r2 }, 'moved', { chunk: 256 });
    const after = (await keysUnder(stores.objects, 't/acme/s/moved/tile/')).length;
    expect(again).toMatchObject({ size: 600, tilesWritten: after - before });
    // Step 2's two tiles are put again (same bytes, not new), step 3's one is new.
    expect(counts.tilePuts).toBe(3);
    expect(after - before).toBe(1);
    await expectTiles('moved', 600);
  });

  it('is a conflict when another tiler moved the record meanwhile; the next pass goes on from it', {
    timeout: 180_000,
  }, async () => {
    await append(
      'race',
      Array.from({ length: 12 }, () => 50),
    );
    const { objects, records } = instrumented(stores, {
      // Another tiler runs to the end between this pass's tile writes and its first move.
      moveRecord: async (n) => {
        if (n === 1) await pass(stores, 'race', { chunk: 256 });
      },
    });
    await expect(pass({ objects, records }, 'race', { chunk: 256 })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await stores.records.get(tilesKey('acme', 'race'))).toMatchObject({ size: 600 });
    expect(await pass(stores, 'race', { chunk: 256 })).toMatchObject({
      size: 600,
      tilesWritten: 0,
    });
    await expectTiles('race', 600);
  });

  it('moves no record once its lease is lost (the fence fails): a conflict', {
    timeout: 180_000,
  }, async () => {
    await append(
      'fenced',
      Array.from({ length: 6 }, () => 50),
    );
    const fence: TransactOp = {
      kind: 'check',
      key: { pk: 'lease#nobody', sk: 'lease' },
      conditions: [{ op: 'eq', attr: 'owner', value: 'me' }],
    };
    await expect(pass(stores, 'fenced', { chunk: 256, fence })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await stores.records.get(tilesKey('acme', 'fenced'))).toBeUndefined();
    expect(await pass(stores, 'fenced', { chunk: 256 })).toMatchObject({ size: 300 });
    await expectTiles('fenced', 300);
  });
});
