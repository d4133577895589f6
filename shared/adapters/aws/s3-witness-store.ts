import { createHash } from 'node:crypto';
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { InvalidFormatError } from '../../domain/errors.js';
import { checkObjectKey } from '../../ports/validate.js';
import type { WitnessStore, WitnessVersion } from '../../ports/witness-store.js';

export interface S3WitnessStoreOptions {
  client: S3Client;
  /** The witness bucket: Object Lock enabled (so versioned), never the data bucket. */
  bucket: string;
  /** How long each published version is locked, in compliance mode. Default 3,650 days. */
  retentionDays?: number;
  clock?: { now(): number };
}

const DAY_MS = 86_400_000;

/**
 * The AWS witness: a bucket with S3 Object Lock. Every publish puts a new version locked in
 * COMPLIANCE mode until now + retention: no user, root included, can overwrite or delete that
 * version (or shorten its lock) before then. A put under an existing key only adds a version,
 * so `versions` lists and reads every version (ListObjectVersions, GetObject by VersionId),
 * never just the latest. Object Lock puts need an integrity header: Content-MD5 is sent.
 */
export class S3WitnessStore implements WitnessStore {
  readonly #o: S3WitnessStoreOptions;

  constructor(options: S3WitnessStoreOptions) {
    this.#o = options;
  }

  get bucket(): string {
    return this.#o.bucket;
  }

  async publish(key: string, body: Uint8Array): Promise<void> {
    checkObjectKey(key);
    const now = this.#o.clock?.now() ?? Date.now();
    await this.#o.client.send(
      new PutObjectCommand({
        Bucket: this.#o.bucket,
        Key: key,
        Body: body,
        ContentType: 'application/json',
        ContentMD5: createHash('md5').update(body).digest('base64'),
        ObjectLockMode: 'COMPLIANCE',
        ObjectLockRetainUntilDate: new Date(now + (this.#o.retentionDays ?? 3650) * DAY_MS),
      }),
    );
  }

  async versions(prefix: string): Promise<WitnessVersion[]> {
    const listed: Array<{ key: string; versionId: string }> = [];
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    do {
      const page = await this.#o.client.send(
        new ListObjectVersionsCommand({
          Bucket: this.#o.bucket,
          Prefix: prefix,
          KeyMarker: keyMarker,
          VersionIdMarker: versionMarker,
        }),
      );
      for (const v of page.Versions ?? []) {
        if (v.Key && v.VersionId) listed.push({ key: v.Key, versionId: v.VersionId });
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      versionMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
    } while (keyMarker !== undefined);
    return Promise.all(
      listed.map(async ({ key, versionId }) => {
        const got = await this.#o.client.send(
          new GetObjectCommand({ Bucket: this.#o.bucket, Key: key, VersionId: versionId }),
        );
        if (!got.Body) throw new InvalidFormatError(`witness version ${key}@${versionId} is empty`);
        return { key, versionId, body: await got.Body.transformToByteArray() };
      }),
    );
  }
}
