import { createHash } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAwsApp } from '../../functions/wiring/aws.js';
import { parseAwsSettings } from '../../shared/config/settings.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import {
  hasAwsEmulators,
  type LentStorage,
  lendTestStorage,
  makeDynamoClient,
  makeS3Client,
} from '../support/aws.js';
import { FakeKms } from '../support/fake-kms.js';

/**
 * The AWS wiring with encryption at rest (functions/wiring/aws.ts, HEFESTO_KMS_KEY_ARN): the
 * API on S3 and DynamoDB (the emulators) with the stream keys wrapped by a fake KMS speaking
 * KMS's JSON protocol to the SDK's real client. A marker payload appended through the API
 * reads back, and neither its bytes nor its plain digest are in any stored S3 object (key or
 * body) or DynamoDB item; KMS is called per stream, not per append; the same stores served
 * without the KMS key verify but refuse the content (503).
 */

const ROOT = 'root-key-for-kms-tests-0123456789abcdef';
const MARKER = 'marker-kms-5e1d0b-refund-approved';
const payload = { text: MARKER, approved: true };

describe.skipIf(!hasAwsEmulators())('encryption at rest on S3 + DynamoDB with KMS', () => {
  const s3 = makeS3Client();
  const dynamo = makeDynamoClient();
  let kms: FakeKms;
  let lent: LentStorage;
  beforeAll(async () => {
    kms = await new FakeKms().start();
  });
  afterAll(async () => {
    await kms.stop();
    s3.destroy();
    dynamo.destroy();
  });
  beforeEach(async () => {
    lent = await lendTestStorage();
  });
  afterEach(() => lent.giveBack());

  const app = (withKms: boolean) =>
    createAwsApp(
      parseAwsSettings({
        HEFESTO_BUCKET: lent.bucket,
        HEFESTO_TABLE: lent.table,
        HEFESTO_API_KEY: ROOT,
        HEFESTO_LOG_LEVEL: 'silent',
        HEFESTO_S3_FORCE_PATH_STYLE: 'true',
        ...(withKms ? { HEFESTO_KMS_KEY_ARN: kms.keyArn } : {}),
      }),
      undefined,
      undefined,
      { s3, dynamo, kms: kms.client() },
    );
  const call = (a: ReturnType<typeof app>, path: string, body?: unknown) =>
    Promise.resolve(
      a.request(path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: {
          authorization: `Bearer ${ROOT}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );

  /** Every S3 key and body and every DynamoDB item of the lent pair, as stored. */
  const stored = async (): Promise<Buffer[]> => {
    const out: Buffer[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(
        new ListObjectsV2Command({ Bucket: lent.bucket, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? []) {
        out.push(Buffer.from(o.Key ?? '', 'utf8'));
        const got = await s3.send(new GetObjectCommand({ Bucket: lent.bucket, Key: o.Key }));
        out.push(Buffer.from((await got.Body?.transformToByteArray()) ?? []));
      }
      token = page.NextContinuationToken;
    } while (token);
    let start: Record<string, never> | undefined;
    do {
      const page = await dynamo.send(
        new ScanCommand({ TableName: lent.table, ExclusiveStartKey: start }),
      );
      for (const item of page.Items ?? []) out.push(Buffer.from(JSON.stringify(item), 'utf8'));
      start = page.LastEvaluatedKey as Record<string, never> | undefined;
    } while (start);
    return out;
  };

  it('a marker payload appended and read back is in no stored object or item', async () => {
    const api = app(true);
    const before = { ...kms.calls };
    for (let i = 0; i < 5; i++) {
      const res = await call(api, '/v1/streams/run-1/events', {
        events: [{ type: 'user.message', payload }],
      });
      expect(res.status).toBe(201);
    }
    // KMS per stream, never per append (one GenerateDataKey, one Decrypt of the stored record)
    expect(kms.calls.GenerateDataKey - before.GenerateDataKey).toBe(1);
    expect(kms.calls.Decrypt - before.Decrypt).toBe(1);

    const read = await call(api, '/v1/streams/run-1/events');
    expect(read.status).toBe(200);
    const page = (await read.json()) as { events: Array<{ payload: unknown }> };
    expect(page.events.map((e) => e.payload)).toEqual(Array(5).fill(payload));

    const json = canonicalJson(payload);
    const digest = createHash('sha256').update(json).digest();
    const needles = [
      Buffer.from(MARKER, 'utf8'),
      Buffer.from(json, 'utf8'),
      digest,
      Buffer.from(digest.toString('hex'), 'utf8'),
    ];
    const everything = await stored();
    expect(everything.length).toBeGreaterThan(4);
    for (const bytes of everything) {
      for (const needle of needles) expect(bytes.includes(needle)).toBe(false);
    }
    // the key record names the KMS key; what it stores is KMS's ciphertext blob
    const keyItem = everything.map((b) => b.toString('utf8')).find((s) => s.includes('"key"'));
    expect(keyItem).toContain(`kms:${kms.keyArn}`);
  });

  it('without the KMS key: /verify passes, the content is refused with 503', async () => {
    const api = app(true);
    for (let i = 0; i < 3; i++) {
      await call(api, '/v1/streams/run-1/events', {
        events: [{ type: 'user.message', payload: { ...payload, i } }],
      });
    }
    const blind = app(false);
    const verify = await call(blind, '/v1/streams/run-1/verify');
    expect(verify.status).toBe(200);
    expect(await verify.json()).toMatchObject({ ok: true });
    const read = await call(blind, '/v1/streams/run-1/events');
    expect(read.status).toBe(503);
    expect(await read.text()).not.toContain(MARKER);

    // the key disabled: the content is refused, saying so, on a cold process
    kms.enabled = false;
    try {
      const cold = await call(app(true), '/v1/streams/run-1/events');
      expect(cold.status).toBe(503);
      expect(await cold.text()).not.toContain(MARKER);
    } finally {
      kms.enabled = true;
    }
  });
});
