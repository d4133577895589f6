import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { S3WitnessStore } from '../../shared/adapters/aws/s3-witness-store.js';
import { LocalKeyStore } from '../../shared/adapters/local/local-key-store.js';
import { type LocalStores, openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { LocalWitnessStore } from '../../shared/adapters/local/local-witness-store.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import type { CompactionReport } from '../../shared/compaction/compactor.js';
import type { Settings } from '../../shared/config/settings.js';
import { DataDirInUseError, DataDirNotFoundError } from '../../shared/domain/errors.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import type { WitnessStore } from '../../shared/ports/witness-store.js';
import { compactionLedgerSettings, createCompactor, runAndLog } from './compaction.js';
import { workLedgerSettings } from './work.js';

/**
 * One compaction pass now, from the command line (`npx tsx scripts/compact.ts`, and the CLI's
 * `hefesto compact`): on S3 + DynamoDB when HEFESTO_BUCKET and HEFESTO_TABLE are set, else on
 * the embedded data directory (HEFESTO_DATA_DIR). A data directory that does not exist is
 * refused (DataDirNotFoundError), never created; one a running embedded server owns is
 * refused with DataDirInUseError (the CLI then asks that server, POST /v1/admin/compact).
 */
export const runCompaction = async (
  settings: Settings,
  opened?: OpenStores,
  options: PassOptions = {},
): Promise<CompactionReport> => {
  const clock = systemClock;
  const logger = pino({ level: settings.logLevel });
  const stores = opened ?? (await openCompactionStores(settings));
  // The stream keys, as the server holds them (embedded.ts): the snapshots a pass writes
  // hydrate the state from the events, which an encrypted stream seals.
  let keyStore: LocalKeyStore | undefined;
  try {
    keyStore = settings.keyStore ? new LocalKeyStore(settings.keyStore) : undefined;
    const keyring = keyStore ? new StreamKeyring(stores.records, keyStore) : undefined;
    const ledger = new Ledger(
      { objects: stores.objects, records: stores.records, clock, ...(keyring && { keyring }) },
      {
        snapshotEvery: settings.snapshotEvery,
        ...compactionLedgerSettings(settings),
        ...workLedgerSettings(settings),
      },
    );
    const compactor = createCompactor(
      {
        objects: stores.objects,
        records: stores.records,
        clock,
        states: ledger.states,
        checkpoints: ledger.checkpoints,
        logger,
        ...(stores.witness ? { witness: stores.witness } : {}),
      },
      settings,
    );
    let report = await runAndLog(compactor, logger);
    for (let pass = 1; options.untilDone && report.more; pass++) {
      options.onPass?.(report);
      if (!madeProgress(report)) throw new CompactionStuckError(pass);
      report = await runAndLog(compactor, logger);
    }
    return report;
  } finally {
    keyStore?.close();
    stores.close();
  }
};

export interface PassOptions {
  /** Run passes until one reports `more: false` (`hefesto compact --until-done`). */
  untilDone?: boolean;
  /** Told each pass's report but the last (which runCompaction answers). */
  onPass?: (report: CompactionReport) => void;
}

/** Whether a pass did anything: a pass that reports more must have (compactor.ts). */
export const madeProgress = (r: CompactionReport): boolean =>
  r.segmentsMerged +
    r.tilesWritten +
    r.objectsDeleted +
    r.snapshotsWritten +
    r.streamsPruned +
    r.streamsDeleted +
    r.orphansFound +
    r.chunksDeleted +
    r.treesBackfilled >
  0;

/** --until-done met a pass that left work and did nothing: running more would loop. */
export class CompactionStuckError extends Error {
  constructor(readonly passes: number) {
    super(`compaction pass ${passes} left work for later and did none; stopping`);
    this.name = 'CompactionStuckError';
  }
}

export interface OpenStores {
  objects: ObjectStore;
  records: RecordStore;
  /** Where the pass publishes signed heads (the data dir's witness/, or the witness bucket). */
  witness?: WitnessStore;
  close(): void;
}

/** The stores a pass runs on (see runCompaction); the caller closes them. */
export const openCompactionStores = async (settings: Settings): Promise<OpenStores> => {
  if (settings.bucket !== undefined && settings.table !== undefined) {
    const { S3Client } = await import('@aws-sdk/client-s3');
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const s3 = new S3Client({ forcePathStyle: settings.s3ForcePathStyle, maxAttempts: 1 });
    const dynamo = new DynamoDBClient({ maxAttempts: 1 });
    return {
      objects: new S3ObjectStore({
        client: s3,
        bucket: settings.bucket,
        segmentBucket: settings.segmentBucket,
      }),
      records: new DynamoRecordStore({ client: dynamo, table: settings.table }),
      ...(settings.witnessBucket
        ? { witness: new S3WitnessStore({ client: s3, bucket: settings.witnessBucket }) }
        : {}),
      close: () => {
        s3.destroy();
        dynamo.destroy();
      },
    };
  }
  // The local store creates its directory: a mistyped or unset HEFESTO_DATA_DIR would get an
  // empty one and a pass that reports nothing done.
  const dir = resolve(settings.dataDir);
  if (!existsSync(dir)) throw new DataDirNotFoundError(dir);
  let stores: LocalStores;
  try {
    stores = openLocalStores(dir, { durability: settings.durability });
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    throw new DataDirInUseError(dir, { ...(err.pid ? { pid: err.pid } : {}), cause: err });
  }
  const { objects, records } = stores;
  return {
    objects,
    records,
    witness: new LocalWitnessStore(join(dir, 'witness')),
    close: () => {
      records.close();
      objects.close();
    },
  };
};
