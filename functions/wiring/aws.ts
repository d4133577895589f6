import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { type DestinationStream, pino } from 'pino';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import type { KmsClientLike } from '../../shared/adapters/aws/kms-key-wrapper.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import { checkPinnedKeyIds } from '../../shared/adapters/aws/signing-secret.js';
import type { AwsSettings } from '../../shared/config/settings.js';
import { createApp } from '../../shared/http/app.js';
import type { AppEnv } from '../../shared/http/context.js';
import { noStaticAssets, type StaticAssets } from '../../shared/http/static-assets.js';
import { KeyService } from '../../shared/keys/keys.js';
import { checkSigningKeys } from '../../shared/keys/signing-keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { systemClock } from '../../shared/ports/clock.js';
import type { KeyRing } from '../../shared/ports/signer.js';
import { awsKeyring } from './aws-keys.js';
import { compactionLedgerSettings } from './compaction.js';
import { workLedgerSettings } from './work.js';

/**
 * Wiring of the Lambda entry: settings -> S3 and DynamoDB clients -> adapters -> services
 * -> app. Region, credentials and endpoints come from the SDK's standard environment
 * (AWS_REGION, AWS_ENDPOINT_URL_S3, ...). The adapters retry on their own, so each client
 * makes one attempt per call. `signing`: the key ring read from the signing secret (once per
 * cold start, functions/api.ts); without it the app serves no tree heads.
 */
/** How to recover when the secret lost a key that signed heads. */
const SECRET_HINT =
  'Restore the secret version that holds it, or, if it is lost for good, put a secret value ' +
  'whose "retired" lists its public JWK (GET /v1/signing-keys of a healthy deployment, or the ' +
  'signing-keys record) and a new seed (docs/operations.md, "Signing keys").';

/**
 * At cold start, before the first request: the ring from the secret must hold the key ids
 * the stack pins (HEFESTO_SIGNING_KEY_IDS) and every key recorded as having signed heads
 * (signing-keys.ts, one GetItem; the first cold start records them). Rejects otherwise, so
 * the function serves nothing with a lost or replaced key.
 */
export const checkAwsSigning = async (settings: AwsSettings, ring: KeyRing): Promise<void> => {
  checkPinnedKeyIds(ring, settings.signingKeyIds);
  const dynamo = new DynamoDBClient({ maxAttempts: 1 });
  try {
    const records = new DynamoRecordStore({ client: dynamo, table: settings.table });
    await checkSigningKeys(records, ring, SECRET_HINT);
  } finally {
    dynamo.destroy();
  }
};

/**
 * Components the Lambda entry makes itself, given instead by the cost bench and its test
 * (bench/aws-operations.ts): SDK clients with a counting middleware, a log destination that
 * counts bytes. The wiring is otherwise the function's own.
 */
export interface AwsComponents {
  s3?: S3Client;
  dynamo?: DynamoDBClient;
  logDestination?: DestinationStream;
  /** The KMS client (tests: one pointed at test/support/fake-kms.ts). */
  kms?: KmsClientLike;
}

export const createAwsApp = (
  settings: AwsSettings,
  signing?: KeyRing,
  assets: StaticAssets = noStaticAssets,
  components: AwsComponents = {},
): OpenAPIHono<AppEnv> => {
  const clock = systemClock;
  const logOptions = { level: settings.logLevel };
  const logger = components.logDestination
    ? pino(logOptions, components.logDestination)
    : pino(logOptions);
  const s3 =
    components.s3 ?? new S3Client({ forcePathStyle: settings.s3ForcePathStyle, maxAttempts: 1 });
  const dynamo = components.dynamo ?? new DynamoDBClient({ maxAttempts: 1 });
  const objects = new S3ObjectStore({
    client: s3,
    bucket: settings.bucket,
    segmentBucket: settings.segmentBucket,
  });
  const records = new DynamoRecordStore({ client: dynamo, table: settings.table, clock });
  const keyring = awsKeyring(settings, records, components.kms);
  const ledger = new Ledger(
    { objects, records, clock, ...(keyring && { keyring }) },
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
