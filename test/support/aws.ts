import { randomBytes } from 'node:crypto';
import {
  BatchWriteItemCommand,
  DeleteTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  ScanCommand,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { createRecordTable } from '../../shared/adapters/aws/dynamo-record-store.js';
import { onDrop } from './lent-storage.js';

/**
 * Clients and throwaway resources for tests that run the AWS adapters against emulators
 * (`bash scripts/emulators/start.sh`, then `source .emulators/env`) or LocalStack
 * (`AWS_ENDPOINT_URL=http://localhost:4566`).
 */

export interface AwsTestConfig {
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  s3Endpoint: string | undefined;
  dynamoEndpoint: string | undefined;
  forcePathStyle: boolean;
}

const parseFlag = (name: string, value: string | undefined, fallback: boolean): boolean => {
  if (value === undefined || value === '') return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new Error(`${name} must be true or false, got ${JSON.stringify(value)}`);
};

/** Read from the environment; service-specific endpoints win over `AWS_ENDPOINT_URL`. */
export const awsTestConfig = (env: NodeJS.ProcessEnv = process.env): AwsTestConfig => ({
  region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
  // DynamoDB Local refuses access keys containing '_' or '-'.
  credentials: {
    accessKeyId: env.AWS_ACCESS_KEY_ID || 'test',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY || 'test',
  },
  s3Endpoint: env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined,
  dynamoEndpoint: env.AWS_ENDPOINT_URL_DYNAMODB || env.AWS_ENDPOINT_URL || undefined,
  // Emulators serve path-style URLs; virtual-hosted buckets need DNS they do not have.
  forcePathStyle: parseFlag('HEFESTO_S3_FORCE_PATH_STYLE', env.HEFESTO_S3_FORCE_PATH_STYLE, true),
});

/** Both endpoints are configured: tests never fall through to real AWS. */
export const hasAwsEmulators = (env: NodeJS.ProcessEnv = process.env): boolean => {
  const config = awsTestConfig(env);
  return config.s3Endpoint !== undefined && config.dynamoEndpoint !== undefined;
};

/**
 * The adapters retry on their own, so test clients default to one SDK attempt: scripted
 * faults are then consumed once per adapter attempt.
 */
export const makeS3Client = (overrides: S3ClientConfig = {}): S3Client => {
  const config = awsTestConfig();
  return new S3Client({
    region: config.region,
    credentials: config.credentials,
    endpoint: config.s3Endpoint,
    forcePathStyle: config.forcePathStyle,
    maxAttempts: 1,
    ...overrides,
  });
};

export const makeDynamoClient = (overrides: DynamoDBClientConfig = {}): DynamoDBClient => {
  const config = awsTestConfig();
  return new DynamoDBClient({
    region: config.region,
    credentials: config.credentials,
    endpoint: config.dynamoEndpoint,
    maxAttempts: 1,
    ...overrides,
  });
};

export interface TestResource {
  name: string;
  /** Deletes the resource and everything in it. */
  cleanup(): Promise<void>;
}

const uniqueName = () =>
  `hefesto-test-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;

/** Deletes every object under `prefix`, a listed page (up to 1000 keys) per request. */
export const deleteObjects = async (client: S3Client, bucket: string, prefix = '') => {
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    const objects = (page.Contents ?? []).flatMap((o) =>
      o.Key === undefined ? [] : [{ Key: o.Key }],
    );
    if (objects.length > 0) {
      await client.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }),
      );
    }
    token = page.NextContinuationToken;
  } while (token !== undefined);
};

/** A new bucket with a unique name; cleanup empties and deletes it (and its own client). */
export const createTestBucket = async (given?: S3Client): Promise<TestResource> => {
  const client = given ?? makeS3Client();
  const name = uniqueName();
  await client.send(new CreateBucketCommand({ Bucket: name }));
  return {
    name,
    cleanup: async () => {
      await deleteObjects(client, name);
      await client.send(new DeleteBucketCommand({ Bucket: name }));
      if (!given) client.destroy();
    },
  };
};

/** A new record table (as `createRecordTable` makes it); cleanup drops it (and its own client). */
export const createTestTable = async (given?: DynamoDBClient): Promise<TestResource> => {
  const client = given ?? makeDynamoClient();
  const name = uniqueName();
  await createRecordTable(client, name);
  return {
    name,
    cleanup: async () => {
      await client.send(new DeleteTableCommand({ TableName: name })).catch((err: unknown) => {
        if ((err as Error).name !== 'ResourceNotFoundException') throw err;
      });
      if (!given) client.destroy();
    },
  };
};

/** Deletes every item of `table` (a record table: pk/sk keys), 25 per batch request. */
export const deleteItems = async (client: DynamoDBClient, table: string) => {
  for (;;) {
    // Scan again until a scan finds nothing: pages are read from the start each round, so an
    // item written while a round ran is not missed.
    const page = await client.send(
      new ScanCommand({ TableName: table, ProjectionExpression: 'pk, sk', ConsistentRead: true }),
    );
    const items = page.Items ?? [];
    if (items.length === 0) return;
    for (let i = 0; i < items.length; i += 25) {
      let requests: WriteRequest[] = items
        .slice(i, i + 25)
        .map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length > 0; attempt++) {
        if (attempt === 20) throw new Error(`${table}: items left unprocessed 20 times`);
        const out = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [table]: requests } }),
        );
        requests = out.UnprocessedItems?.[table] ?? [];
      }
    }
  }
};

/**
 * One bucket and one record table per test file, lent in turn to the tests that ask
 * (`lendTestStorage`) and emptied when given back, instead of a bucket and a table made and
 * dropped for every test: creating and dropping them is most of an emulator's work for a short
 * test. Two tests holding storage at once get a pair each. The pairs are dropped after the
 * file's tests (`dropLentStorage` in test/support/lent-storage.ts, which the setup file
 * test/support/aws-storage.ts calls).
 *
 * Outside vitest (a bench importing the test stores) nothing is pooled: each loan is a pair of
 * its own, dropped when given back.
 */
export interface LentStorage {
  bucket: string;
  table: string;
  /** Empties both and gives them back (or drops them, outside vitest). */
  giveBack(): Promise<void>;
}

interface Pair {
  bucket: TestResource;
  table: TestResource;
}

/** Every pair this file made, those not lent now, and the clients that make and empty them. */
const made: Pair[] = [];
const free: Pair[] = [];
let clients: { s3: S3Client; dynamo: DynamoDBClient } | undefined;
const poolClients = () => {
  if (!clients) {
    const own = {
      s3: makeS3Client({ maxAttempts: 3 }),
      dynamo: makeDynamoClient({ maxAttempts: 3 }),
    };
    clients = own;
    // Dropped after the file's tests, lent or not (a test that failed may not have given back).
    onDrop(async () => {
      clients = undefined;
      free.length = 0;
      const pairs = made.splice(0);
      await Promise.all(pairs.flatMap((p) => [p.bucket.cleanup(), p.table.cleanup()]));
      own.s3.destroy();
      own.dynamo.destroy();
    });
  }
  return clients;
};

const pooling = () => process.env.VITEST !== undefined;

export const lendTestStorage = async (): Promise<LentStorage> => {
  const { s3, dynamo } = poolClients();
  let pair = pooling() ? free.pop() : undefined;
  if (!pair) {
    const [bucket, table] = await Promise.all([createTestBucket(s3), createTestTable(dynamo)]);
    pair = { bucket, table };
    if (pooling()) made.push(pair);
  }
  const lent = pair;
  let given = false;
  return {
    bucket: lent.bucket.name,
    table: lent.table.name,
    giveBack: async () => {
      if (given) return;
      given = true;
      if (!pooling()) {
        await Promise.all([lent.bucket.cleanup(), lent.table.cleanup()]);
        return;
      }
      await Promise.all([
        deleteObjects(s3, lent.bucket.name),
        deleteItems(dynamo, lent.table.name),
      ]);
      free.push(lent);
    },
  };
};
