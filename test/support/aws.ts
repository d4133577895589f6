import { randomBytes } from 'node:crypto';
import {
  DeleteTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
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
