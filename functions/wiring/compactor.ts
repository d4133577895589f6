import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { type Logger, pino } from 'pino';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { S3WitnessStore } from '../../shared/adapters/aws/s3-witness-store.js';
import type { Compactor } from '../../shared/compaction/compactor.js';
import type { AwsSettings } from '../../shared/config/settings.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { systemClock } from '../../shared/ports/clock.js';
import { awsKeyring } from './aws-keys.js';
import { compactionLedgerSettings, createCompactor } from './compaction.js';
import { workLedgerSettings } from './work.js';

/**
 * Wiring of the compactor Lambda: settings -> S3 and DynamoDB clients -> adapters -> ledger
 * (for hydration) -> compactor. Like the API's wiring, clients make one attempt per call and
 * the adapters retry.
 */
export const createAwsCompactor = (
  settings: AwsSettings,
): { compactor: Compactor; logger: Logger } => {
  const clock = systemClock;
  const logger = pino({ level: settings.logLevel });
  const s3 = new S3Client({ forcePathStyle: settings.s3ForcePathStyle, maxAttempts: 1 });
  const dynamo = new DynamoDBClient({ maxAttempts: 1 });
  const objects = new S3ObjectStore({
    client: s3,
    bucket: settings.bucket,
    segmentBucket: settings.segmentBucket,
  });
  const records = new DynamoRecordStore({ client: dynamo, table: settings.table, clock });
  // The stream keys, as the API holds them: the snapshots a run writes hydrate the state
  // from the events, which an encrypted stream seals.
  const keyring = awsKeyring(settings, records);
  const ledger = new Ledger(
    { objects, records, clock, ...(keyring && { keyring }) },
    {
      snapshotEvery: settings.snapshotEvery,
      ...compactionLedgerSettings(settings),
      ...workLedgerSettings(settings),
    },
  );
  // The witness bucket (Object Lock, compliance mode; never the data bucket): the stack sets
  // HEFESTO_WITNESS_BUCKET for the compactor function alone.
  const witness = settings.witnessBucket
    ? new S3WitnessStore({ client: s3, bucket: settings.witnessBucket, clock })
    : undefined;
  const compactor = createCompactor(
    {
      objects,
      records,
      clock,
      states: ledger.states,
      checkpoints: ledger.checkpoints,
      logger,
      ...(witness ? { witness } : {}),
    },
    settings,
  );
  return { compactor, logger };
};
