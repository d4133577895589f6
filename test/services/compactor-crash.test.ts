import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Reader } from '../../shared/chain/reader.js';
import { snapshotIndexKey, streamPk } from '../../shared/chain/storage-keys.js';
import type { CompactStep } from '../../shared/compaction/compact-types.js';
import type { CompactionReport } from '../../shared/compaction/compactor.js';
import { StreamNotFoundError } from '../../shared/domain/errors.js';
import type { LedgerEvent } from '../../shared/domain/event.js';
import { DELTA_EVENT } from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import {
  batch,
  compactionWorld,
  keysUnder,
  LEASE,
  leftovers,
  manualClock,
  partition,
  readAll,
  runUntilCrash,
  settle,
  type World,
} from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

const T = 'acme';
const DAY = 86_400_000;

const STEPS: CompactStep[] = [
  'lease-acquired',
  'base-written',
  'merge-written',
  'merge-published',
  'garbage-deleted',
  'garbage-cleared',
  'orphan-recorded',
  'prune-snapshot-written',
  'pruned',
  'prune-cleaned',
  'deletion-marked',
  'stream-objects-deleted',
  'stream-records-deleted',
  'stream-deleted',
  'lease-released',
  'work-removed',
];

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe.each(allStores.filter((f) => f.enabled))('compactor crashes on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  /**
   * Three streams with work of every kind: `merge` (small segments, bases a checkpoint never
   * wrote, and an orphan left by an earlier compactor that died before publishing), `expiring`
   * (past its TTL) and `pruned` (every event older than its horizon).
   */
  const scenario = async () => {
    const clock = manualClock();
    const world = compactionWorld(stores, {}, clock);
    const append = (
      stream: string,
      events: Parameters<typeof world.ledger.appender.append>[0]['events'],
    ) => world.ledger.appender.append({ tenant: T, stream, events });
    // Fewer segments than a marker needs: only its pruning horizon brings the compactor.
    await append('pruned', batch('p', 2));
    for (let i = 0; i < 2; i++) await append('pruned', batch(`p${i}`));
    clock.advance(DAY + 1);
    let digest = EMPTY_STATE_DIGEST_V2;
    const mergeEvents = async (from: number, to: number) => {
      for (let i = from; i <= to; i++) {
        if (i % 2 === 1) {
          await append('merge', batch(`m${i}`));
          continue;
        }
        const stateDigest = digestV2({ n: i });
        const ops = [{ op: 'set', path: '/n', value: i }];
        await append('merge', [
          { type: DELTA_EVENT, payload: { ops, baseDigest: digest, stateDigest } },
        ]);
        digest = stateDigest;
      }
    };
    await mergeEvents(1, 12);
    // An earlier compactor died after writing a merged object; the run has grown since.
    await runUntilCrash(world, 'merge-written', () => {});
    clock.advance(LEASE + 1);
    await mergeEvents(13, 18);
    await world.ledger.retention.set(T, 'pruned', { pruneAfterMs: DAY });
    for (let i = 0; i < 5; i++) await append('expiring', batch(`x${i}`));
    await world.ledger.retention.set(T, 'expiring', { ttlMs: 1 });
    clock.advance(2);
    return { world, clock, merge: await readAll(world, T, 'merge') };
  };

  const assertSettled = async (world: World, merge: LedgerEvent[]) => {
    expect(await readAll(world, T, 'merge')).toEqual(merge);
    expect(await world.ledger.reader.verify(T, 'merge')).toMatchObject({ ok: true, seq: 18 });
    for (const seq of [6, 12, 18]) {
      expect(await stores.records.get(snapshotIndexKey(T, 'merge', seq))).toBeDefined();
    }
    expect(await leftovers(world, T, 'merge')).toMatchObject({ unnamed: [], pending: [] });
    expect(await keysUnder(stores.objects, `t/${T}/s/expiring/`)).toEqual([]);
    expect(await partition(stores.records, streamPk(T, 'expiring'))).toEqual([]);
    expect(await world.ledger.retention.get(T, 'pruned')).toMatchObject({ prunedSeq: 4 });
    expect(await world.ledger.reader.verify(T, 'pruned')).toMatchObject({ ok: true, seq: 4 });
    expect(await keysUnder(stores.objects, `t/${T}/s/pruned/seg/`)).toEqual([]);
    expect(await leftovers(world, T, 'pruned')).toMatchObject({ unnamed: [], pending: [] });
  };

  it('completes every kind of work without a crash', async () => {
    const { world, clock, merge } = await scenario();
    await settle(world, clock.advance);
    await assertSettled(world, merge);
  });

  it.each(STEPS)('dies after %s; the next runs complete the work', async (step) => {
    const { world, clock, merge } = await scenario();
    await runUntilCrash(world, step, clock.advance);
    await settle(world, clock.advance);
    await assertSettled(world, merge);
  });
});

describe.each(allStores.filter((f) => f.enabled))('compactor under load on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('races appenders, checkpoints, forks, readers and a deletion, losing nothing', async () => {
    const duration = factory.name === 'aws' ? 5000 : 1500;
    // Time runs faster for the services than for the test: each compactor pass moves it on.
    let offset = 0;
    const clock = { now: () => Date.now() + offset };
    const world = compactionWorld(stores, { maxAttempts: 200 }, clock);
    const { appender, checkpoints, states } = world.ledger;
    const reader = new Reader({ ...stores, layoutRetries: 20, retryDelayMs: 2 });
    // The race runs for `duration`, and on past it (up to a cap) until each party has done
    // enough for the assertions below to mean something: on a loaded machine a fixed window
    // can end before the compactor deleted anything or the writers were acked ten times.
    const started = Date.now();
    const cap = duration * 12;
    const enough = () =>
      acked.length > 10 &&
      reads > 2 &&
      reports.some((r) => r.segmentsWritten > 0) &&
      reports.some((r) => r.objectsDeleted > 0);
    const running = () => {
      const elapsed = Date.now() - started;
      return elapsed < duration || (elapsed < cap && !enough());
    };
    const acked: Array<{ labels: string[]; lastSeq: number; hash: string }> = [];
    const hashes = new Map<number, string>();
    const problems: string[] = [];
    const opening = await appender.append({ tenant: T, stream: 'main', events: batch('open') });
    acked.push({ labels: ['open'], lastSeq: 1, hash: opening.response.head.hash });
    await checkpoints.checkpoint({
      tenant: T,
      stream: 'state',
      ops: [{ op: 'set', path: '/n', value: 0 }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
    });

    const writer = async (w: number) => {
      for (let i = 0; running(); i++) {
        const labels = Array.from({ length: 1 + (i % 3) }, (_, j) => `w${w}-${i}-${j}`);
        const events = labels.map((label) => ({ type: 'observation', payload: { label } }));
        const idempotency = { key: `w${w}-${i}`, digest: `${w}`.repeat(64).slice(0, 64) };
        for (;;) {
          await tick();
          try {
            const r = await appender.append({ tenant: T, stream: 'main', events, idempotency });
            acked.push({ labels, lastSeq: r.response.lastSeq, hash: r.response.head.hash });
            break;
          } catch (err) {
            const code = (err as { code?: string }).code;
            if (code !== 'ErrIdempotencyInProgress' && code !== 'ErrUnavailable') throw err;
          }
        }
      }
    };
    const readerLoop = async () => {
      while (running()) {
        await tick();
        const events: LedgerEvent[] = [];
        let from: number | undefined;
        for (;;) {
          const page = await reader.readEvents(T, 'main', { from, limit: 1000 });
          events.push(...page.events);
          if (page.next === undefined) break;
          from = page.next;
        }
        events.forEach((e, i) => {
          if (e.seq !== i + 1) problems.push(`gap: seq ${e.seq} at position ${i}`);
          const seen = hashes.get(e.seq);
          if (seen !== undefined && seen !== e.hash) problems.push(`seq ${e.seq} changed`);
          hashes.set(e.seq, e.hash);
        });
        const verified = await reader.verify(T, 'main');
        if (!verified.ok) problems.push(`verify failed: ${verified.reason}`);
        reads++;
      }
    };
    const stateful = async () => {
      let digest = digestV2({ n: 0 });
      let n = 0;
      const forks: Array<{ id: string; value: number }> = [];
      while (running()) {
        await tick();
        n++;
        const r = await checkpoints.checkpoint({
          tenant: T,
          stream: 'state',
          ops: [{ op: 'set', path: '/n', value: n }],
          baseDigest: digest,
        });
        digest = r.stateDigest;
        if (n % 5 === 0) {
          const id = `fork-${n}`;
          await checkpoints.fork({ tenant: T, source: 'state', at: r.seq, newStreamId: id });
          forks.push({ id, value: n });
        }
        const at = Math.max(1, r.seq - 3);
        const past = await states.hydrate(T, 'state', at);
        if (past.state.n !== at - 1) problems.push(`state at ${at} is ${String(past.state.n)}`);
      }
      return { n, forks };
    };
    const doomed = async () => {
      await appender.append({ tenant: T, stream: 'doomed', events: batch('d', 3), ttlMs: 5000 });
      while (running()) {
        await tick();
        try {
          const events = await readAll(
            { ...world, ledger: { ...world.ledger, reader } } as World,
            T,
            'doomed',
          );
          if (events.some((e, i) => e.seq !== i + 1)) problems.push('doomed stream had a gap');
        } catch (err) {
          if (!(err instanceof StreamNotFoundError)) throw err;
        }
      }
    };
    const reports: CompactionReport[] = [];
    let reads = 0;
    const compactorLoop = async () => {
      while (running()) {
        await tick();
        reports.push(await world.compactor({ graceMs: 3000, leaseMs: 2000 }).run());
        offset += 1000;
      }
    };

    const [, , , , , , stateResult] = await Promise.all([
      writer(0),
      writer(1),
      writer(2),
      readerLoop(),
      readerLoop(),
      doomed(),
      stateful(),
      compactorLoop(),
      compactorLoop(),
    ]);
    expect(problems).toEqual([]);
    const during = reports.reduce(
      (sum, r) => ({
        written: sum.written + r.segmentsWritten,
        deleted: sum.deleted + r.objectsDeleted,
      }),
      { written: 0, deleted: 0 },
    );
    expect(during.written).toBeGreaterThan(0);
    expect(during.deleted).toBeGreaterThan(0);
    expect(reads).toBeGreaterThan(2);
    reports.push(
      ...(await settle(world, (ms) => {
        offset += ms;
      })),
    );
    expect(reports.reduce((n, r) => n + r.streamsDeleted, 0)).toBe(1);
    await expect(world.ledger.reader.head(T, 'doomed')).rejects.toBeInstanceOf(StreamNotFoundError);

    const events = await readAll(world, T, 'main');
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const labels = events.map((e) => (e.payload as { label: string }).label).sort();
    expect(labels).toEqual(acked.flatMap((a) => a.labels).sort());
    for (const a of acked) expect(events[a.lastSeq - 1]?.hash).toBe(a.hash);
    expect(await world.ledger.reader.verify(T, 'main')).toMatchObject({ ok: true });
    expect((await leftovers(world, T, 'main')).unnamed).toEqual([]);
    expect((await states.hydrate(T, 'state')).state).toEqual({ n: stateResult.n });
    for (const fork of stateResult.forks) {
      expect((await states.hydrate(T, fork.id)).state).toEqual({ n: fork.value });
    }
    expect(acked.length).toBeGreaterThan(10);
  });
});
