import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { S3WitnessStore } from '../../shared/adapters/aws/s3-witness-store.js';
import { LocalWitnessStore } from '../../shared/adapters/local/local-witness-store.js';
import { MemoryWitnessStore, type WitnessStore } from '../../shared/ports/witness-store.js';
import { makeS3Client } from './aws.js';

/**
 * A witness store of the same kind as a store factory: memory, a directory, or an Object Lock
 * bucket on the emulator (left behind: its versions are locked for a day).
 */
export const makeWitness = async (
  kind: string,
): Promise<{ witness: WitnessStore; cleanup: () => Promise<void> }> => {
  if (kind === 'local') {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-witness-'));
    return {
      witness: new LocalWitnessStore(dir),
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (kind === 'aws') {
    const client = makeS3Client();
    const bucket = `hefesto-witness-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    await client.send(
      new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }),
    );
    return {
      witness: new S3WitnessStore({ client, bucket, retentionDays: 1 }),
      cleanup: async () => client.destroy(),
    };
  }
  return { witness: new MemoryWitnessStore(), cleanup: async () => {} };
};
