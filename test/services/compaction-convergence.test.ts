import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CompactionReport } from '../../shared/compaction/compactor.js';
import type { LedgerEvent } from '../../shared/domain/event.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import {
  batch,
  compactionWorld,
  leftovers,
  type ManualClock,
  manualClock,
  readAll,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Compaction converges in a few passes however many small segments a stream has (issue 22):
 * a pass merges in rounds of at most 95 inputs until the target size or the run's deadline,
 * renewing its lease, instead of stopping at half its lease (which, with a 1 s grace, was
 * 125 ms: passes spent it on the Merkle tiles and merged nothing, or merged one run of 95).
 *
 * The compactor's object requests each cost 2 ms of its clock (storage latency, the same on
 * every adapter), with the embedded bench's 1 s grace (lease: grace / 4, the default).
 */

const T = 'acme';
const S = 'long-run';
const SEGMENTS = 1_000;
const GRACE_MS = 1_000;
const REQUEST_MS = 2;

/**
 * The store as the compactor sees it: every request takes REQUEST_MS, and `during` runs before
 * some of them (a reader's request between two of the compactor's).
 */
const slowStore = (
  objects: ObjectStore,
  clock: ManualClock,
  during: () => Promise<void> = async () => {},
): ObjectStore => {
  const slow =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      clock.advance(REQUEST_MS);
      await during();
      return fn(...args);
    };
  return {
    get: slow((k) => objects.get(k)),
    head: slow((k) => objects.head(k)),
    list: slow((p, o) => objects.list(p, o)),
    putIfAbsent: slow((k, b) => objects.putIfAbsent(k, b)),
    putIfMatch: slow((k, b, e) => objects.putIfMatch(k, b, e)),
    delete: slow((k) => objects.delete(k)),
  };
};

/**
 * A client paging through the stream while the compactor runs: one page of 100 events every
 * `every` compactor requests, from where the last page ended; each whole walk must be the
 * stream's events, each once, in order, with their hashes.
 */
const pagingReader = (world: World, expected: LedgerEvent[], every = 20) => {
  let requests = 0;
  let from: number | undefined;
  let walked: LedgerEvent[] = [];
  let reading = false;
  const state = { pages: 0, walks: 0 };
  const step = async () => {
    // One page at a time (the compactor's reads run 16 at once): the client pages in order.
    // Pages of 250: the tiles of one-event segments read no segment (tree-leaves.ts), so nearly
    // all the compactor's requests are its merges', in bursts of 16 that one page spans.
    if (++requests % every !== 0 || reading) return;
    reading = true;
    const page = await world.ledger.reader.readEvents(T, S, { from, limit: 250 });
    reading = false;
    state.pages++;
    walked.push(...page.events);
    from = page.next;
    if (from !== undefined) return;
    expect(walked.map((e) => e.seq)).toEqual(expected.map((e) => e.seq));
    expect(walked.map((e) => e.hash)).toEqual(expected.map((e) => e.hash));
    state.walks++;
    walked = [];
  };
  return { step, state };
};

describe.each(allStores.filter((f) => f.enabled))('compaction convergence on $name', (factory) => {
  let stores: StorePair;
  let clock: ManualClock;
  let world: World;

  beforeEach(async () => {
    stores = await factory.make();
    clock = manualClock();
    world = compactionWorld(stores, {}, clock);
  });
  afterEach(() => stores.cleanup());

  it(`merges ${SEGMENTS} small segments in at most 3 passes, reads seeing every event once throughout`, {
    timeout: 600_000,
  }, async () => {
    for (let i = 0; i < SEGMENTS; i++) {
      await world.ledger.appender.append({ tenant: T, stream: S, events: batch(`e${i}`) });
    }
    const before = await readAll(world, T, S);
    expect(before).toHaveLength(SEGMENTS);
    expect((await leftovers(world, T, S)).indexed).toBe(SEGMENTS);

    // Passes as `hefesto compact` runs them: a fresh compactor each, back to back.
    const reader = pagingReader(world, before);
    const objects = slowStore(stores.objects, clock, reader.step);
    const reports: CompactionReport[] = [];
    for (let pass = 0; pass < 10; pass++) {
      const report = await world
        .compactor({ objects, graceMs: GRACE_MS, leaseMs: GRACE_MS / 4 })
        .run();
      reports.push(report);
      if (!report.more) break;
    }

    // Whole walks of the stream were read before, during and after the merges.
    expect(reader.state.walks).toBeGreaterThan(2);
    expect(reports.length).toBeLessThanOrEqual(3);
    expect(reports.at(-1)?.more).toBe(false);
    for (const report of reports.filter((r) => r.more)) {
      expect(report.segmentsMerged).toBeGreaterThan(0);
    }
    // Converged: 1,000 events of ~100 B fit one segment of the 4 MiB target.
    expect((await leftovers(world, T, S)).indexed).toBe(1);
    expect(await readAll(world, T, S)).toEqual(before);
    expect(await world.ledger.reader.verify(T, S)).toMatchObject({ ok: true, seq: SEGMENTS });
  });

  it('a pass cut short by its time has merged something, and the next goes on', {
    timeout: 300_000,
  }, async () => {
    for (let i = 0; i < 300; i++) {
      await world.ledger.appender.append({ tenant: T, stream: S, events: batch(`e${i}`) });
    }
    const before = await readAll(world, T, S);
    const objects = slowStore(stores.objects, clock);
    // Less time than the Merkle tiles of 300 events take: the run is over before its merges.
    const compactor = () =>
      world.compactor({ objects, graceMs: GRACE_MS, leaseMs: GRACE_MS / 4, maxRunMs: 50 });
    const reports: CompactionReport[] = [];
    for (let pass = 0; pass < 20; pass++) {
      const report = await compactor().run();
      expect(report.errors).toBe(0);
      reports.push(report);
      if (!report.more) break;
    }

    expect(reports.length).toBeGreaterThan(1);
    expect(reports.at(-1)?.more).toBe(false);
    for (const report of reports.filter((r) => r.more)) {
      expect(report.segmentsMerged + report.tilesWritten).toBeGreaterThan(0);
    }
    // Nothing is left to merge: another pass merges nothing.
    expect(await compactor().run()).toMatchObject({ segmentsMerged: 0 });
    expect(await readAll(world, T, S)).toEqual(before);
  });
});
