// Proves the S3 and DynamoDB endpoints the tests run against are real implementations:
// S3 enforces create-only puts (If-None-Match: *) and DynamoDB enforces condition expressions.
// Runs against scripts/emulators/start.sh (radosgw + DynamoDB Local) or LocalStack
// (AWS_ENDPOINT_URL); skipped when no endpoint is configured.
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  PutItemCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const env = process.env;
const s3Endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
const ddbEndpoint = env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL;
const region = env.AWS_REGION ?? 'us-east-1';
const credentials = {
  accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'test',
  secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'test',
};
const suffix = `${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;

describe.skipIf(!s3Endpoint)('S3 emulator', () => {
  const s3 = new S3Client({ endpoint: s3Endpoint, forcePathStyle: true, region, credentials });
  const Bucket = `hefesto-emu-${suffix}`;
  const Key = 'create-only.txt';

  beforeAll(async () => {
    await s3.send(new CreateBucketCommand({ Bucket }));
  });

  afterAll(async () => {
    await s3.send(new DeleteObjectCommand({ Bucket, Key })).catch(() => undefined);
    await s3.send(new DeleteBucketCommand({ Bucket })).catch(() => undefined);
    s3.destroy();
  });

  it('rejects a second create-only put with 412', async () => {
    const first = await s3.send(
      new PutObjectCommand({ Bucket, Key, Body: 'first', IfNoneMatch: '*' }),
    );
    expect(first.ETag).toBeTruthy();

    const error = await s3
      .send(new PutObjectCommand({ Bucket, Key, Body: 'second', IfNoneMatch: '*' }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(S3ServiceException);
    expect((error as S3ServiceException).$metadata.httpStatusCode).toBe(412);
  });
});

describe.skipIf(!ddbEndpoint)('DynamoDB emulator', () => {
  const ddb = new DynamoDBClient({ endpoint: ddbEndpoint, region, credentials });
  const TableName = `hefesto-emu-${suffix}`;

  beforeAll(async () => {
    await ddb.send(
      new CreateTableCommand({
        TableName,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await waitUntilTableExists({ client: ddb, maxWaitTime: 30 }, { TableName });
  });

  afterAll(async () => {
    await ddb.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
    ddb.destroy();
  });

  it('rejects a second attribute_not_exists put with ConditionalCheckFailedException', async () => {
    const put = () =>
      ddb.send(
        new PutItemCommand({
          TableName,
          Item: { pk: { S: 'only-once' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );

    await put();
    await expect(put()).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });
});
