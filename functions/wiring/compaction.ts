import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type CompactionReport, Compactor } from '../../shared/compaction/compactor.js';
import type { Settings } from '../../shared/config/settings.js';
import type { LedgerSettings } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import type { WitnessStore } from '../../shared/ports/witness-store.js';
import type { Checkpointer } from '../../shared/state/checkpoint.js';
import type { StateStore } from '../../shared/state/state.js';

/**
 * The compactor's wiring, shared by its three ways to run: the scheduled Lambda
 * (functions/compactor.ts), the embedded server's timer (functions/server.ts) and the
 * command line (scripts/compact.ts, `runCompaction`).
 */

const DAY_MS = 86_400_000;

/** What the ledger's appends need from the compaction and retention settings. */
export const compactionLedgerSettings = (settings: Settings): LedgerSettings => ({
  markEvery: settings.compaction.markEvery,
  defaultTtlMs: settings.retentionDays * DAY_MS,
});

export interface CompactorDeps {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  states: StateStore;
  /** The ledger's checkpoints: the compactor deletes expired state entries with them. */
  checkpoints: Checkpointer;
  logger: Logger;
  /** Where each run publishes the signed heads of the streams that moved (witness.ts). */
  witness?: WitnessStore;
  /** Deletes expired records after each run (the embedded store; DynamoDB has its own TTL). */
  purgeExpired?: () => Promise<number>;
}

export const createCompactor = (deps: CompactorDeps, settings: Settings): Compactor => {
  const { compaction } = settings;
  const purge = deps.purgeExpired;
  return new Compactor({
    ...deps,
    ids: { newId: () => randomUUID() },
    targetBytes: compaction.targetBytes,
    graceMs: compaction.graceMs,
    maxStreams: compaction.maxStreams,
    maxRunMs: compaction.maxRunMs,
    ...(purge && {
      purgeExpired: () =>
        purge().catch((err: unknown) => {
          deps.logger.warn({ err }, 'purging expired records failed; the next run purges');
          return 0;
        }),
    }),
    onWitnessError: (err) =>
      deps.logger.warn({ err }, 'publishing to the witness failed; the next run publishes'),
    onError: (err, at) =>
      deps.logger.warn(
        { err, tenant: at.tenant, stream: at.stream },
        'compaction of a stream failed',
      ),
  });
};

/** One bounded pass, reported in one log line. */
export const runAndLog = async (
  compactor: Compactor,
  logger: Logger,
): Promise<CompactionReport> => {
  const report = await compactor.run();
  logger.info({ compaction: report }, 'compaction run');
  return report;
};

export interface CompactionTimer {
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * Runs the compactor every `intervalMs` (never two runs at once) in the embedded server. The
 * timer does not keep the process alive; a failed run is logged and the next one goes on.
 */
export const startCompactionTimer = (
  compactor: Compactor,
  logger: Logger,
  intervalMs: number,
): CompactionTimer => {
  let stopped = false;
  let running: Promise<unknown> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(tick, intervalMs);
    timer.unref();
  };
  const tick = async () => {
    running = runAndLog(compactor, logger).catch((err: unknown) =>
      logger.error({ err }, 'compaction run failed'),
    );
    await running;
    running = undefined;
    if (!stopped) schedule();
  };
  schedule();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
};
