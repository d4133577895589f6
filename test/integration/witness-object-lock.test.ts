import { randomBytes } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  PutObjectCommand,
  PutObjectRetentionCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3WitnessStore } from '../../shared/adapters/aws/s3-witness-store.js';
import { hasAwsEmulators, makeS3Client } from '../support/aws.js';

/**
 * S3 Object Lock on the emulator (radosgw): the witness bucket's guarantee. A version put in
 * COMPLIANCE mode can be neither deleted nor have its lock shortened before its retention
 * ends; a put under the same key only adds a version, so the witness reads every version.
 * The buckets stay behind (their versions are locked for a day: the point of the test).
 */

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

describe.skipIf(!hasAwsEmulators())('witness bucket with Object Lock on the emulator', () => {
  let s3: S3Client;
  let bucket: string;
  let witness: S3WitnessStore;
  beforeAll(async () => {
    s3 = makeS3Client();
    bucket = `hefesto-witness-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }));
    witness = new S3WitnessStore({ client: s3, bucket, retentionDays: 1 });
  });
  afterAll(() => s3.destroy());

  it('creates a bucket with Object Lock enabled', async () => {
    const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: bucket }));
    expect(config.ObjectLockConfiguration?.ObjectLockEnabled).toBe('Enabled');
  });

  it('locks each published version in compliance mode: no delete, no shorter lock, no overwrite', async () => {
    await witness.publish('w/acme/0001.json', Buffer.from('{"run":1}'));
    const [v1] = await witness.versions('w/acme/');
    if (!v1) throw new Error('nothing published');
    const retention = await s3.send(
      new GetObjectRetentionCommand({ Bucket: bucket, Key: v1.key, VersionId: v1.versionId }),
    );
    expect(retention.Retention?.Mode).toBe('COMPLIANCE');

    // Deleting the locked version is refused.
    await expect(
      s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: v1.key, VersionId: v1.versionId })),
    ).rejects.toMatchObject({ name: 'AccessDenied' });
    // So is shortening its lock.
    await expect(
      s3.send(
        new PutObjectRetentionCommand({
          Bucket: bucket,
          Key: v1.key,
          VersionId: v1.versionId,
          Retention: { Mode: 'COMPLIANCE', RetainUntilDate: new Date(Date.now() + 60_000) },
        }),
      ),
    ).rejects.toBeDefined();
    // An "overwrite" of the key and a delete without a version id only add versions/markers:
    // the locked version is still there, bytes unchanged, and audits read it.
    await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: v1.key, Body: Buffer.from('{"run":"forged"}') }),
    );
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: v1.key }));
    const all = await witness.versions('w/acme/');
    expect(all.map((v) => text(v.body)).sort()).toEqual(['{"run":"forged"}', '{"run":1}']);
    expect(all.find((v) => v.versionId === v1.versionId)?.body).toEqual(v1.body);
  });
});
