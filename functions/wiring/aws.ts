import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { pino } from 'pino';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import type { AwsSettings } from '../../shared/config/settings.js';
import { createApp } from '../../shared/http/app.js';
import type { AppEnv } from '../../shared/http/context.js';
import { noStaticAssets, type StaticAssets } from '../../shared/http/static-assets.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { KeyRing } from '../../shared/ports/signer.js';
import { KeyService } from '../../shared/services/keys.js';
import { Ledger } from '../../shared/services/ledger.js';
import { compactionLedgerSettings } from './compaction.js';
import { workLedgerSettings } from './work.js';

/**
 * Wiring of the Lambda entry: settings -> S3 and DynamoDB clients -> adapters -> services
 * -> app. Region, credentials and endpoints come from the SDK's standard environment
 * (AWS_REGION, AWS_ENDPOINT_URL_S3, ...). The adapters retry on their own, so each client
 * makes one attempt per call. `signing`: the key ring read from the signing secret (once per
 * cold start, functions/api.ts); without it the app serves no tree heads.
 */
export const createAwsApp = (
  settings: AwsSettings,
  signing?: KeyRing,
  assets: StaticAssets = noStaticAssets,
): OpenAPIHono<AppEnv> => {
  const clock = systemClock;
  const logger = pino({ level: settings.logLevel });
  const s3 = new S3Client({ forcePathStyle: settings.s3ForcePathStyle, maxAttempts: 1 });
  const dynamo = new DynamoDBClient({ maxAttempts: 1 });
  const objects = new S3ObjectStore({ client: s3, bucket: settings.bucket });
  const records = new DynamoRecordStore({ client: dynamo, table: settings.table, clock });
  const ledger = new Ledger(
    { objects, records, clock },
    {
      ...(signing ? { signing } : {}),
      snapshotEvery: settings.snapshotEvery,
      ...compactionLedgerSettings(settings),
      ...workLedgerSettings(settings),
      onSnapshotError: (err) =>
        logger.warn({ err }, 'base snapshot not written; the compactor writes it'),
    },
  );
  const keys = new KeyService({ records, clock, rootKey: settings.apiKey });
  return createApp({ ledger, keys, logger, clock, limits: settings.limits, assets });
};
