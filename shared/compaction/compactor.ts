import { toHead, toWorkItem, type WorkItem } from '../chain/layout.js';
import { Reader } from '../chain/reader.js';
import {
  BASE_DUE_PREFIX,
  CHUNK_GC_DUE_PK,
  duePk,
  dueUntilSk,
  headKey,
  markerPk,
  WORK_SHARDS,
} from '../chain/storage-keys.js';
import { ConflictError, CrashInjectedError } from '../domain/errors.js';
import type { Clock, IdSource } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import type { WitnessStore } from '../ports/witness-store.js';
import { writeTreeTiles } from '../proofs/tree-tiles.js';
import { publishWitness } from '../proofs/witness.js';
import type { Checkpointer } from '../state/checkpoint.js';
import type { StateStore } from '../state/state.js';
import { ChunkCollector, type ChunkGcStep } from './chunk-gc.js';
import { expireEntries } from './compact-expiry.js';
import { collectGarbage, sweepOrphans } from './compact-gc.js';
import { acquireLease, releaseLease, renewLease } from './compact-lease.js';
import { mergeStream } from './compact-merge.js';
import { cleanUpPruned, expireStream, pruneStream } from './compact-retention.js';
import {
  type CompactCrashHook,
  type CompactDeps,
  type CompactionStats,
  type CompactLimits,
  emptyStats,
  pastDeadline,
  readPrefix,
  type Visit,
  visitItem,
} from './compact-types.js';

/**
 * The scheduled compactor: keeps storage bounded and the chain verifiable. One run:
 *
 *   1. Collects work without scanning streams: the work markers of every shard (put by the
 *      appends that made a stream worth a visit, in their commit transaction) and the visits
 *      scheduled up to now (garbage past its grace, expiry, pruning horizon, unfinished work),
 *      at most `maxStreams`.
 *   2. Visits each stream, while time is left (the first whatever the clock says), holding its
 *      lease (compact-lease.ts; renewed before each merge round; a stream another compactor
 *      holds is left for later). A visit, each step fenced by the lease:
 *      expiry (compact-retention.ts) — an expired stream is deleted and nothing else is done;
 *      the state's expired entries, when its last delta's hint says some are due, deleted by
 *      one checkpoint on the digest read (compact-expiry.ts); missing base snapshots are written; the Merkle tree's tiles (and the backfill of a
 *      stream written before trees; tree-tiles.ts); pruning; merges (compact-merge.ts); garbage and
 *      orphans past their grace are deleted, then the stream is swept for new orphans
 *      (compact-gc.ts). A visit out of time makes its first merge all the same (and pruning
 *      waits for the tiles), then schedules its own continuation.
 *   3. Removes the work item (a marker only if no append re-marked the stream meanwhile).
 *   4. Publishes the signed heads of the streams that moved since the last run to the
 *      witness, when it has one (witness.ts).
 * Every step is idempotent and every write is conditional, so a compactor that dies after any
 * step leaves work the next run finds (its work item stays) and completes; two compactors at
 * once never work on the same stream; neither ever changes an event or a hash.
 */

export interface CompactorOptions {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  /** Source of lease owner ids (unique per compactor and visit). */
  ids: IdSource;
  /** Hydration, to write base snapshots. */
  states: StateStore;
  /**
   * The ledger's checkpoints, to delete the expired entries of states whose deltas carry an
   * `expiry` hint (compact-expiry.ts); without it, they stay (reads leave them out).
   */
  checkpoints?: Checkpointer;
  /** Expired entries deleted at most per stream visit (one checkpoint). Default 1000. */
  maxExpiredPerVisit?: number;
  /** Target size of a merged segment. Default 4 MiB. */
  targetBytes?: number;
  /** How long superseded objects stay readable. Default 10 min. */
  graceMs?: number;
  /**
   * How long a lease on a stream lasts unless renewed (a visit renews it before each merge
   * round, so a visit may last the run); must be well under the grace. Default grace / 4.
   */
  leaseMs?: number;
  /** Streams visited per run. Default 100. */
  maxStreams?: number;
  /** Time budget of a run, which a visit of one stream may use whole. Default 60 s. */
  maxRunMs?: number;
  /** Segments merged at most into one (capped so a publish fits a transaction). Default 96. */
  maxInputs?: number;
  /** Told about a stream whose visit failed (the run goes on). */
  onError?: (err: unknown, stream: { tenant: string; stream: string }) => void;
  crash?: CompactCrashHook;
  /** Where the signed heads of streams that moved are published after each run (witness.ts). */
  witness?: WitnessStore;
  /** Told when publishing to the witness failed (the next run publishes again). */
  onWitnessError?: (err: unknown) => void;
  /** Test hook: throw from it to die after a step of the tenant chunk GC (chunk-gc.ts). */
  chunkCrash?: (step: ChunkGcStep) => void;
  /**
   * Deletes the records whose TTL has passed, at the end of each run. The embedded record
   * store needs it (SQLite has no TTL of its own: expired idempotency records would stay on
   * disk until the next start); DynamoDB expires items itself, so the AWS wiring passes none.
   * It must not throw (the wiring logs a failure; the next run purges again).
   */
  purgeExpired?: () => Promise<number>;
}

export interface CompactionReport extends CompactionStats {
  /** Work was left for the next run (out of time or streams). */
  more: boolean;
  durationMs: number;
}

type VisitOutcome = 'done' | 'busy' | 'partial' | 'gone';

export class Compactor {
  readonly #deps: CompactDeps;
  readonly #limits: CompactLimits;
  readonly #o: CompactorOptions & { maxStreams: number; maxRunMs: number };
  /** Verified segment reads of the tree step. */
  readonly #reader: Reader;
  #runs = 0;
  readonly chunkGc: ChunkCollector;

  constructor(options: CompactorOptions) {
    const graceMs = options.graceMs ?? 600_000;
    this.#o = {
      ...options,
      maxStreams: options.maxStreams ?? 100,
      maxRunMs: options.maxRunMs ?? 60_000,
    };
    this.#deps = options;
    this.#reader = new Reader(options);
    this.#limits = {
      targetBytes: options.targetBytes ?? 4 * 1024 * 1024,
      graceMs,
      leaseMs: options.leaseMs ?? Math.floor(graceMs / 4),
      maxInputs: options.maxInputs ?? 96,
    };
    this.chunkGc = new ChunkCollector({
      ...options,
      chunks: options.states.chunks,
      graceMs,
      leaseMs: this.#limits.leaseMs,
      crash: options.chunkCrash,
    });
  }

  /**
   * 4. The chunk GC of every tenant whose visit is due (a reference was released, or a
   * condemned list has waited its grace): one step each (chunk-gc.ts).
   */
  async #collectChunks(stats: CompactionStats, deadline: number): Promise<boolean> {
    const { records, clock } = this.#deps;
    const page = await records.query(CHUNK_GC_DUE_PK, { limit: this.#o.maxStreams });
    for (const item of page.items) {
      if (Number(item.dueAt) > clock.now()) continue;
      if (clock.now() >= deadline) return true;
      const report = await this.chunkGc.run(item.sk);
      stats.chunksDeleted += report.deleted;
    }
    return page.next !== undefined;
  }

  /** One bounded pass; the report is what the run's one log line says. */
  async run(): Promise<CompactionReport> {
    const { clock, records, crash } = this.#deps;
    const start = clock.now();
    const deadline = start + this.#o.maxRunMs;
    const stats = emptyStats();
    const items = await this.#workItems(start);
    const seen = new Set<string>();
    let more = items.length >= this.#o.maxStreams;
    for (const item of items) {
      // The first visit is made whatever the clock says: a run that leaves work has done some.
      if (stats.examined > 0 && clock.now() >= deadline) {
        more = true;
        break;
      }
      const id = `${item.tenant}#${item.stream}`;
      if (seen.has(id)) {
        await this.#remove(item);
        continue;
      }
      seen.add(id);
      stats.examined++;
      let outcome: VisitOutcome;
      try {
        outcome = await this.#visit(item.tenant, item.stream, deadline, stats);
      } catch (err) {
        if (err instanceof CrashInjectedError) throw err;
        stats.errors++;
        this.#o.onError?.(err, item);
        // Try again after a grace period rather than in every run.
        await records.put(visitItem(item, clock.now() + this.#limits.graceMs));
        outcome = 'done';
      }
      if (outcome === 'busy') {
        stats.busy++;
        continue;
      }
      if (outcome === 'partial') more = true;
      await this.#remove(item);
      crash?.('work-removed');
    }
    if (await this.#collectChunks(stats, deadline)) more = true;
    await this.#witness(stats);
    await this.#o.purgeExpired?.();
    return { ...stats, more, durationMs: clock.now() - start };
  }

  /** Compacts one stream now, whatever its markers say (tests, tools). */
  async compactStream(tenant: string, stream: string): Promise<CompactionReport> {
    const start = this.#deps.clock.now();
    const stats = emptyStats();
    stats.examined++;
    const outcome = await this.#visit(tenant, stream, start + this.#o.maxRunMs, stats);
    if (outcome === 'busy') stats.busy++;
    return { ...stats, more: outcome !== 'done', durationMs: this.#deps.clock.now() - start };
  }

  /** 4. The heads of the streams that moved since the last run, to the witness. */
  async #witness(stats: CompactionStats): Promise<void> {
    const { witness } = this.#o;
    if (!witness) return;
    try {
      const report = await publishWitness({ ...this.#deps, ids: this.#o.ids, witness });
      stats.headsWitnessed += report.headsWitnessed;
      stats.witnessObjects += report.witnessObjects;
    } catch (err) {
      if (err instanceof CrashInjectedError) throw err;
      stats.errors++;
      this.#o.onWitnessError?.(err);
    }
  }

  async #workItems(now: number): Promise<WorkItem[]> {
    const { records } = this.#deps;
    const max = this.#o.maxStreams;
    const items: WorkItem[] = [];
    const offset = (this.#runs++ + Math.floor(now / 1000)) % WORK_SHARDS;
    const until = dueUntilSk(now);
    for (let i = 0; i < WORK_SHARDS && items.length < max; i++) {
      const shard = (offset + i) % WORK_SHARDS;
      // Scheduled visits first: expiry and garbage past its grace are what bound storage.
      const due = await records.query(duePk(shard), { limit: max - items.length });
      items.push(...due.items.filter((item) => item.sk <= until).map(toWorkItem));
      if (items.length >= max) break;
      const markers = await records.query(markerPk(shard), { limit: max - items.length });
      items.push(...markers.items.map(toWorkItem));
    }
    return items;
  }

  async #remove(item: WorkItem): Promise<void> {
    try {
      await this.#deps.records.delete(item.key, {
        conditions: item.seq === undefined ? [] : [{ op: 'eq', attr: 'seq', value: item.seq }],
      });
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err; // re-marked meanwhile: keep it
    }
  }

  async #visit(
    tenant: string,
    stream: string,
    runDeadline: number,
    stats: CompactionStats,
  ): Promise<VisitOutcome> {
    const { records, clock, crash } = this.#deps;
    const { leaseMs, graceMs } = this.#limits;
    if (!(await records.get(headKey(tenant, stream)))) return 'gone';
    const owner = this.#o.ids.newId();
    const lease = await acquireLease(records, clock, { tenant, stream, owner, leaseMs });
    if (!lease) return 'busy';
    crash?.('lease-acquired');
    const release = () => releaseLease(records, { tenant, stream, owner });
    try {
      const item = await records.get(headKey(tenant, stream));
      if (!item) {
        await release();
        return 'gone';
      }
      const start = clock.now();
      const visit: Visit = {
        tenant,
        stream,
        head: toHead(item),
        fence: lease.fence,
        // The run's deadline, not the lease's: merges renew the lease round by round.
        deadline: runDeadline,
        renew: () => renewLease(records, clock, { tenant, stream, owner, leaseMs }),
        gcDueAt: start + graceMs + leaseMs,
        stats,
      };
      const outcome = await this.#steps(visit);
      // Out of time: the rest is scheduled now (for the next run), not left to a new marker.
      if (outcome === 'partial') await records.put(visitItem(visit, clock.now()));
      if (outcome !== 'gone') await release();
      crash?.('lease-released');
      return outcome;
    } catch (err) {
      // A real crash would not release; an error does, so the stream is not held for nothing.
      if (!(err instanceof CrashInjectedError)) await release().catch(() => undefined);
      throw err;
    }
  }

  async #steps(visit: Visit): Promise<VisitOutcome> {
    const deps = this.#deps;
    const { crash } = deps;
    const limits = this.#limits;
    const expiry = await expireStream(deps, limits, visit);
    if (expiry === 'deleted') return 'gone';
    if (expiry === 'partial') return 'partial';
    if (expiry === 'waiting') return 'done';
    const { checkpoints } = this.#o;
    if (checkpoints) {
      visit.stats.entriesExpired += await expireEntries(
        { ...deps, checkpoints },
        visit,
        this.#o.maxExpiredPerVisit ?? 1000,
      );
    }
    await this.#writeDueBases(visit);
    // Tiles before pruning: their leaves come from the segments pruning deletes.
    const tiles = await writeTreeTiles(
      { ...deps, reader: this.#reader },
      { ...visit, outOfTime: () => pastDeadline(deps, visit) },
    );
    visit.stats.tilesWritten += tiles.tilesWritten;
    if (tiles.backfilled) visit.stats.treesBackfilled++;
    crash?.('tiles-written');
    // Pruning waits for the tiles (it deletes their leaves); merges do not (same events, same
    // hashes): a visit out of time still makes its first merge, so a pass that leaves work
    // for the next has merged what it could.
    if (!tiles.partial) {
      await pruneStream(deps, visit);
      await cleanUpPruned(deps, limits, visit);
    }
    const before = visit.stats.segmentsWritten;
    const merged = await mergeStream(deps, limits, visit);
    if (visit.stats.segmentsWritten > before) visit.stats.compacted++;
    if (tiles.partial) return 'partial';
    if ((await collectGarbage(deps, visit)) === 'partial') return 'partial';
    await sweepOrphans(deps, limits, visit);
    return merged;
  }

  /**
   * Base snapshots that are due (`basedue#` records, put by the commit of every K-th delta)
   * and were not written by their checkpoint, in seq order: each hydrates from the one before.
   */
  async #writeDueBases(visit: Visit): Promise<void> {
    const { records, states, crash } = this.#deps;
    const { tenant, stream } = visit;
    for (const item of await readPrefix(records, tenant, stream, BASE_DUE_PREFIX)) {
      const seq = Number(item.seq);
      const pruned = seq <= (visit.head.prunedSeq ?? 0);
      if (pruned || (await states.hasSnapshot(tenant, stream, seq))) {
        await records.delete({ pk: item.pk, sk: item.sk });
        continue;
      }
      await states.writeBaseAt(tenant, stream, seq);
      visit.stats.snapshotsWritten++;
      crash?.('base-written');
    }
  }
}
