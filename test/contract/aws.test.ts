import { afterAll, beforeAll, describe } from 'vitest';
import { DynamoRecordStore } from '../../shared/adapters/aws/dynamo-record-store.js';
import { S3ObjectStore } from '../../shared/adapters/aws/s3-object-store.js';
import {
  createTestBucket,
  createTestTable,
  hasAwsEmulators,
  makeDynamoClient,
  makeS3Client,
  type TestResource,
} from '../support/aws.js';
import { objectStoreContract } from './object-store.contract.js';
import { recordStoreContract } from './record-store.contract.js';

/**
 * The storage contracts against the AWS adapters, on S3 and DynamoDB emulators (or LocalStack).
 * Run `bash scripts/emulators/start.sh && source .emulators/env` first; skipped otherwise.
 * S3: one bucket for the file, a fresh key prefix per test. DynamoDB: a fresh table per test.
 */
describe.skipIf(!hasAwsEmulators())('AWS adapters', () => {
  describe('on S3', () => {
    let bucket: TestResource;
    let tests = 0;
    beforeAll(async () => {
      bucket = await createTestBucket();
    });
    afterAll(async () => {
      await bucket?.cleanup();
    });

    objectStoreContract('aws (S3)', async ({ faults, retry }) => {
      const client = makeS3Client();
      const prefix = `test-${++tests}/`;
      const store = new S3ObjectStore({ client, bucket: bucket.name, prefix, faults, retry });
      return { store, cleanup: async () => client.destroy() };
    });
  });

  // Segments routed to a second bucket (HEFESTO_SEGMENT_BUCKET; an S3 Express One Zone
  // directory bucket on AWS, an ordinary bucket here: radosgw makes no directory buckets).
  describe('on S3 with a segment bucket', () => {
    let data: TestResource;
    let segments: TestResource;
    let tests = 0;
    beforeAll(async () => {
      data = await createTestBucket();
      segments = await createTestBucket();
    });
    afterAll(async () => {
      await data?.cleanup();
      await segments?.cleanup();
    });

    // Keys stored under a segment prefix: every object lands in the segment bucket.
    objectStoreContract(
      'aws (S3, segment keys in the segment bucket)',
      async ({ faults, retry }) => {
        const client = makeS3Client();
        const prefix = `t/contract/s/n${++tests}/seg/`;
        const store = new S3ObjectStore({
          client,
          bucket: data.name,
          segmentBucket: segments.name,
          prefix,
          faults,
          retry,
        });
        return { store, cleanup: async () => client.destroy() };
      },
    );

    // Other keys of a stream: the data bucket; their lists may hold segments, so both buckets
    // are listed and merged.
    objectStoreContract(
      'aws (S3, other keys beside a segment bucket)',
      async ({ faults, retry }) => {
        const client = makeS3Client();
        const prefix = `t/contract/s/o${++tests}/`;
        const store = new S3ObjectStore({
          client,
          bucket: data.name,
          segmentBucket: segments.name,
          prefix,
          faults,
          retry,
        });
        return { store, cleanup: async () => client.destroy() };
      },
    );
  });

  describe('on DynamoDB', () => {
    recordStoreContract('aws (DynamoDB)', async ({ faults, retry }) => {
      const client = makeDynamoClient();
      const table = await createTestTable(client);
      const store = new DynamoRecordStore({ client, table: table.name, faults, retry });
      return {
        store,
        cleanup: async () => {
          await table.cleanup();
          client.destroy();
        },
      };
    });
  });
});
