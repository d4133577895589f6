import { join } from 'node:path';
import { pino } from 'pino';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import type { Settings } from '../../shared/config/settings.js';
import { UnavailableError } from '../../shared/domain/errors.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import type { CompactionReport } from '../../shared/services/compactor.js';
import { Ledger } from '../../shared/services/ledger.js';
import { compactionLedgerSettings, createCompactor, runAndLog } from './compaction.js';

/**
 * One compaction pass now, from the command line (`npx tsx scripts/compact.ts`, and the CLI's
 * `hefesto compact`): on S3 + DynamoDB when HEFESTO_BUCKET and HEFESTO_TABLE are set, else on
 * the embedded data directory (HEFESTO_DATA_DIR). A running embedded server owns its data
 * directory and compacts on its own timer; then this refuses, saying so.
 */
export const runCompaction = async (settings: Settings): Promise<CompactionReport> => {
  const clock = systemClock;
  const logger = pino({ level: settings.logLevel });
  const stores = await openStores(settings);
  try {
    const ledger = new Ledger(
      { objects: stores.objects, records: stores.records, clock },
      { snapshotEvery: settings.snapshotEvery, ...compactionLedgerSettings(settings) },
    );
    const compactor = createCompactor(
      { objects: stores.objects, records: stores.records, clock, states: ledger.states, logger },
      settings,
    );
    return await runAndLog(compactor, logger);
  } finally {
    stores.close();
  }
};

interface OpenStores {
  objects: ObjectStore;
  records: RecordStore;
  close(): void;
}

const openStores = async (settings: Settings): Promise<OpenStores> => {
  if (settings.bucket !== undefined && settings.table !== undefined) {
    const { S3Client } = await import('@aws-sdk/client-s3');
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const s3 = new S3Client({ forcePathStyle: settings.s3ForcePathStyle, maxAttempts: 1 });
    const dynamo = new DynamoDBClient({ maxAttempts: 1 });
    return {
      objects: new S3ObjectStore({ client: s3, bucket: settings.bucket }),
      records: new DynamoRecordStore({ client: dynamo, table: settings.table }),
      close: () => {
        s3.destroy();
        dynamo.destroy();
      },
    };
  }
  let objects: LocalObjectStore;
  try {
    objects = new LocalObjectStore({ dir: settings.dataDir });
  } catch (err) {
    if (!(err instanceof UnavailableError)) throw err;
    throw new UnavailableError(
      `${err.message}: a running server compacts its data directory itself ` +
        '(HEFESTO_COMPACT_INTERVAL_MS); stop it to compact from the command line',
      { cause: err },
    );
  }
  try {
    const records = new LocalRecordStore({ path: join(settings.dataDir, 'records.sqlite') });
    return {
      objects,
      records,
      close: () => {
        records.close();
        objects.close();
      },
    };
  } catch (err) {
    objects.close();
    throw err;
  }
};
