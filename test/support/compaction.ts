import { expect } from 'vitest';
import {
  duePk,
  markerPk,
  SEGMENT_INDEX_PREFIX,
  segmentPrefix,
  streamPk,
  WORK_SHARDS,
} from '../../shared/chain/storage-keys.js';
import type { CompactStep } from '../../shared/compaction/compact-types.js';
import {
  type CompactionReport,
  Compactor,
  type CompactorOptions,
} from '../../shared/compaction/compactor.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import type { EventInput, LedgerEvent } from '../../shared/domain/event.js';
import { Ledger, type LedgerSettings } from '../../shared/ledger/ledger.js';
import type { IdSource } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { Item, RecordStore } from '../../shared/ports/record-store.js';
import type { StorePair } from './stores.js';

/** A clock the test moves by hand. */
export const manualClock = (start = Date.now()) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms), set: (ms: number) => (t = ms) };
};

export type ManualClock = ReturnType<typeof manualClock>;

export const counterIds = (prefix: string): IdSource => {
  let n = 0;
  return { newId: () => `${prefix}-${++n}` };
};

export const GRACE = 10_000;
export const LEASE = 2_000;

/** Stores + ledger + compactors sharing one manual clock, with small compaction settings. */
export const compactionWorld = (
  stores: StorePair,
  settings: LedgerSettings = {},
  clock: { now(): number } & Partial<ManualClock> = manualClock(),
) => {
  const ledger = new Ledger({ ...stores, clock }, { markEvery: 4, snapshotEvery: 3, ...settings });
  let compactors = 0;
  const compactor = (options: Partial<CompactorOptions> = {}) =>
    new Compactor({
      ...stores,
      clock,
      ids: counterIds(`c${++compactors}`),
      states: ledger.states,
      graceMs: GRACE,
      leaseMs: LEASE,
      ...options,
    });
  return { ...stores, clock, ledger, compactor };
};

export type World = ReturnType<typeof compactionWorld>;

export const batch = (label: string, n = 1): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

/** Every event of a stream, read through the verifying reader. */
export const readAll = async (world: World, tenant: string, stream: string) => {
  const events: LedgerEvent[] = [];
  let from: number | undefined;
  for (;;) {
    const page = await world.ledger.reader.readEvents(tenant, stream, { from, limit: 1000 });
    events.push(...page.events);
    if (page.next === undefined) return events;
    from = page.next;
  }
};

export const keysUnder = async (objects: ObjectStore, prefix: string): Promise<string[]> => {
  const keys: string[] = [];
  let after: string | undefined;
  do {
    const page = await objects.list(prefix, { after });
    keys.push(...page.items.map((i) => i.key));
    after = page.next;
  } while (after !== undefined);
  return keys;
};

export const partition = async (records: RecordStore, pk: string): Promise<Item[]> => {
  const items: Item[] = [];
  let after: string | undefined;
  do {
    const page = await records.query(pk, { after });
    items.push(...page.items);
    after = page.next;
  } while (after !== undefined);
  return items;
};

/** Objects under seg/ no index record names, and compaction records still pending. */
export const leftovers = async (world: World, tenant: string, stream: string) => {
  const items = await partition(world.records, streamPk(tenant, stream));
  const named = new Set(
    items.filter((i) => i.sk.startsWith(SEGMENT_INDEX_PREFIX)).map((i) => String(i.objectKey)),
  );
  const keys = await keysUnder(world.objects, segmentPrefix(tenant, stream));
  return {
    unnamed: keys.filter((k) => !named.has(k)),
    /** Segment index records (what a reader walks). */
    indexed: named.size,
    /** Objects under seg/ (superseded ones included until their grace has passed). */
    segments: keys.length,
    pending: items
      .filter((i) => /^(gc#|orphan#|basedue#|sweep|compactor-lease)/.test(i.sk))
      .map((i) => i.sk),
  };
};

/** Work markers and scheduled visits due by `now`, over every shard. */
export const dueWork = async (records: RecordStore, now: number): Promise<Item[]> => {
  const out: Item[] = [];
  for (let shard = 0; shard < WORK_SHARDS; shard++) {
    out.push(...(await partition(records, markerPk(shard))));
    const due = await partition(records, duePk(shard));
    out.push(...due.filter((i) => Number(i.sk.slice(0, 16)) <= now));
  }
  return out;
};

/**
 * Runs fresh compactors, moving the clock past every lease and grace period between runs,
 * until no work is due. Returns the reports.
 */
export const settle = async (world: World, advance: (ms: number) => void, maxRuns = 20) => {
  const reports: CompactionReport[] = [];
  for (let i = 0; i < maxRuns; i++) {
    advance(GRACE + LEASE * 2);
    const report = await world.compactor().run();
    reports.push(report);
    if (report.examined === 0 && (await dueWork(world.records, world.clock.now())).length === 0) {
      return reports;
    }
  }
  throw new Error(`compaction did not settle in ${maxRuns} runs`);
};

export const crashAt = (step: CompactStep) => (at: CompactStep) => {
  if (at === step) throw new CrashInjectedError(at);
};

/** Runs a crashing compactor until its hook fires (moving the clock between runs). */
export const runUntilCrash = async (
  world: World,
  step: CompactStep,
  advance: (ms: number) => void,
  maxRuns = 6,
) => {
  for (let i = 0; i < maxRuns; i++) {
    const err = await world
      .compactor({ crash: crashAt(step) })
      .run()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    if (err instanceof CrashInjectedError) return;
    if (err) throw err;
    advance(GRACE + LEASE * 2);
  }
  expect.fail(`the compactor never reached step ${step}`);
};
