import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { ConflictError } from '../../domain/errors.js';
import type { FaultInjector, FaultKind, StoreOp } from '../../ports/faults.js';
import {
  DEFAULT_LIST_LIMIT,
  type ListOptions,
  type ListPage,
  type ObjectInfo,
  type ObjectStore,
  type PutResult,
  type StoredObject,
} from '../../ports/object-store.js';
import { checkObjectKey } from '../../ports/validate.js';
import { type RetryOptions, withRetries } from '../retry.js';
import {
  errorName,
  httpStatus,
  isNetworkError,
  type SdkCommand,
  SEND_OPTIONS,
  withFaults,
} from './transport.js';

export interface S3ObjectStoreOptions {
  /**
   * The adapter retries on its own; a client built with `maxAttempts: 1` avoids multiplying
   * the SDK's retries by the adapter's.
   */
  client: S3Client;
  bucket: string;
  /**
   * When set, ledger segments (keys `t/{tenant}/s/{stream}/seg/...`, storage-keys.ts) live in
   * this bucket instead: an S3 Express One Zone directory bucket, where the small immutable
   * objects an append writes cost less (docs/operations.md). Everything else stays in
   * `bucket`. Routing looks at the stored key (`prefix` + key). A list whose prefix may hold
   * both lists both and merges them in key order.
   */
  segmentBucket?: string;
  /** Prepended to every key, and stripped from listed keys. */
  prefix?: string;
  faults?: FaultInjector;
  retry?: RetryOptions;
}

const RETRYABLE_NAMES = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'Throttling',
  'ThrottlingException',
  // Another conditional write on the same key was in flight: AWS asks to retry.
  'ConditionalRequestConflict',
  'OperationAborted',
]);

const isRetryable = (err: unknown): boolean => {
  const status = httpStatus(err) ?? 0;
  return (
    RETRYABLE_NAMES.has(errorName(err) ?? '') ||
    status >= 500 ||
    status === 429 ||
    isNetworkError(err)
  );
};

const isNotFound = (err: unknown): boolean =>
  errorName(err) === 'NoSuchKey' || errorName(err) === 'NotFound' || httpStatus(err) === 404;

const isPreconditionFailed = (err: unknown): boolean =>
  errorName(err) === 'PreconditionFailed' || httpStatus(err) === 412;

const faultError = (fault: Exclude<FaultKind, 'reply-lost'>): Error =>
  fault === 'conflict-409'
    ? new S3ServiceException({
        name: 'ConditionalRequestConflict',
        $fault: 'client',
        $metadata: { httpStatusCode: 409 },
        message: 'A conflicting operation occurred. If using PutObject you can retry the request.',
      })
    : new S3ServiceException({
        name: 'SlowDown',
        $fault: 'server',
        $metadata: { httpStatusCode: 503 },
        message: 'Please reduce your request rate.',
      });

/**
 * ETags are kept unquoted. S3 returns them quoted; radosgw refuses a quoted `If-Match`
 * (412 even when current) and AWS compares the value with or without quotes.
 */
const unquote = (etag: string | undefined): string => (etag ?? '').replace(/^(W\/)?"(.*)"$/, '$2');

/** A ledger segment's key (`t/{tenant}/s/{stream}/seg/...`, segmentKey in storage-keys.ts). */
const isSegmentKey = (key: string): boolean => /^t\/[^/]+\/s\/[^/]+\/seg\//.test(key);

/** Whether some segment key starts with `prefix` (then a list must look in the segment bucket). */
const mayHoldSegments = (prefix: string): boolean => {
  const parts = prefix.split('/');
  const shape = ['t', undefined, 's', undefined, 'seg'];
  return parts.every((part, i) => {
    const want = shape[i];
    const last = i === parts.length - 1;
    if (i >= shape.length) return true;
    if (want === undefined) return last || part.length > 0;
    return last ? want.startsWith(part) : part === want;
  });
};

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && Buffer.compare(a, b) === 0;

/**
 * ObjectStore on S3 (or any S3 API with conditional writes: radosgw, LocalStack).
 *
 * A conditional PUT that loses (412, or 404 for `If-Match` on a missing key on AWS) reads the
 * object back: the same bytes mean an earlier attempt of this write landed and its reply was
 * lost, so the call succeeds with `created: false`; other bytes are a `ConflictError`.
 *
 * @example
 * const store = new S3ObjectStore({ client: new S3Client({}), bucket: 'hefesto-data' });
 * await store.putIfAbsent('segments/000001', bytes);
 */
export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly segmentBucket: string | undefined;
  private readonly prefix: string;
  private readonly faults: FaultInjector | undefined;
  private readonly retry: RetryOptions | undefined;

  constructor(options: S3ObjectStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.segmentBucket = options.segmentBucket;
    this.prefix = options.prefix ?? '';
    this.faults = options.faults;
    this.retry = options.retry;
  }

  async get(key: string): Promise<StoredObject | undefined> {
    checkObjectKey(key);
    return this.run('get', () => this.read(key, 'get'));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    checkObjectKey(key);
    return this.run('head', async () => {
      try {
        const out = await this.client.send(
          this.faulty(
            'head',
            new HeadObjectCommand({ Bucket: this.bucketOf(key), Key: this.prefix + key }),
          ),
          SEND_OPTIONS,
        );
        return { key, etag: unquote(out.ETag), size: out.ContentLength ?? 0 };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    });
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    const segments = this.segmentBucket;
    if (segments === undefined || !mayHoldSegments(this.prefix + prefix)) {
      return this.listBucket(this.bucket, prefix, options.after, limit);
    }
    if (isSegmentKey(this.prefix + prefix))
      return this.listDirectory(segments, prefix, options.after, limit);
    // Both buckets may hold keys under the prefix: one page of each, merged in key order; the
    // page ends at the first key that either bucket has not listed past.
    const [data, segs] = await Promise.all([
      this.listBucket(this.bucket, prefix, options.after, limit),
      this.listDirectory(segments, prefix, options.after, limit),
    ]);
    const bound = [data, segs]
      .filter((p) => p.next !== undefined)
      .map((p) => p.next as string)
      .sort()[0];
    const merged = [...data.items, ...segs.items]
      .filter((i) => bound === undefined || i.key <= bound)
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items = merged.slice(0, limit);
    const last = items.at(-1);
    const more = bound !== undefined || merged.length > limit;
    return more && last ? { items, next: last.key } : { items };
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<PutResult> {
    checkObjectKey(key);
    return this.run('putIfAbsent', () => this.conditionalPut('putIfAbsent', key, body, '*'));
  }

  async putIfMatch(key: string, body: Uint8Array, etag: string): Promise<PutResult> {
    checkObjectKey(key);
    return this.run('putIfMatch', () =>
      this.conditionalPut('putIfMatch', key, body, undefined, unquote(etag)),
    );
  }

  async delete(key: string): Promise<void> {
    checkObjectKey(key);
    await this.run('delete', () =>
      this.client.send(
        this.faulty(
          'delete',
          new DeleteObjectCommand({ Bucket: this.bucketOf(key), Key: this.prefix + key }),
        ),
        SEND_OPTIONS,
      ),
    );
  }

  private bucketOf(key: string): string {
    return this.segmentBucket !== undefined && isSegmentKey(this.prefix + key)
      ? this.segmentBucket
      : this.bucket;
  }

  /** One page of one bucket under `prefix`, strictly after `after`, in key order. */
  private async listBucket(
    bucket: string,
    prefix: string,
    after: string | undefined,
    limit: number,
  ): Promise<ListPage> {
    const out = await this.run('list', () =>
      this.client.send(
        this.faulty(
          'list',
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: this.prefix + prefix,
            StartAfter: after === undefined ? undefined : this.prefix + after,
            MaxKeys: limit,
          }),
        ),
        SEND_OPTIONS,
      ),
    );
    const items = (out.Contents ?? []).map((o) => ({
      key: (o.Key ?? '').slice(this.prefix.length),
      etag: unquote(o.ETag),
      size: o.Size ?? 0,
    }));
    const last = items.at(-1);
    return out.IsTruncated && last ? { items, next: last.key } : { items };
  }

  /**
   * One page of a directory bucket under `prefix`: S3 Express One Zone lists in no order and
   * takes no `StartAfter`, so every key under the prefix is listed (1,000 per request) and the
   * page is cut from them sorted. A stream's segment prefix holds few keys once compacted;
   * the cost is one LIST per 1,000 keys per page.
   */
  private async listDirectory(
    bucket: string,
    prefix: string,
    after: string | undefined,
    limit: number,
  ): Promise<ListPage> {
    const all: ObjectInfo[] = [];
    let token: string | undefined;
    do {
      const out = await this.run('list', () =>
        this.client.send(
          this.faulty(
            'list',
            new ListObjectsV2Command({
              Bucket: bucket,
              Prefix: this.prefix + prefix,
              ContinuationToken: token,
            }),
          ),
          SEND_OPTIONS,
        ),
      );
      for (const o of out.Contents ?? []) {
        const key = (o.Key ?? '').slice(this.prefix.length);
        if (after === undefined || key > after)
          all.push({ key, etag: unquote(o.ETag), size: o.Size ?? 0 });
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token !== undefined);
    all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items = all.slice(0, limit);
    const last = items.at(-1);
    return all.length > limit && last ? { items, next: last.key } : { items };
  }

  /** One attempt of a conditional PUT; a lost precondition is resolved by reading back. */
  private async conditionalPut(
    op: StoreOp,
    key: string,
    body: Uint8Array,
    ifNoneMatch?: string,
    ifMatch?: string,
  ): Promise<PutResult> {
    try {
      const out = await this.client.send(
        this.faulty(
          op,
          new PutObjectCommand({
            Bucket: this.bucketOf(key),
            Key: this.prefix + key,
            Body: body,
            IfNoneMatch: ifNoneMatch,
            IfMatch: ifMatch,
          }),
        ),
        SEND_OPTIONS,
      );
      return { etag: unquote(out.ETag), created: true };
    } catch (err) {
      // AWS answers If-Match on a missing key with 404, radosgw with 412.
      if (!isPreconditionFailed(err) && !(ifMatch !== undefined && isNotFound(err))) throw err;
      const current = await this.read(key);
      if (current && sameBytes(current.body, body)) return { etag: current.etag, created: false };
      const info = current && { key, etag: current.etag, size: current.size };
      throw new ConflictError<ObjectInfo>(`object ${key} changed (${op})`, info, undefined, {
        cause: err,
      });
    }
  }

  /** A GET; `op` undefined for the read-back inside a write (no fault injected there). */
  private async read(key: string, op?: StoreOp): Promise<StoredObject | undefined> {
    try {
      const out = await this.client.send(
        this.faulty(
          op,
          new GetObjectCommand({ Bucket: this.bucketOf(key), Key: this.prefix + key }),
        ),
        SEND_OPTIONS,
      );
      const body = out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
      return { key, etag: unquote(out.ETag), size: body.length, body };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private run<T>(op: StoreOp, attempt: () => Promise<T>): Promise<T> {
    return withRetries(`S3 ${op}`, attempt, isRetryable, this.retry);
  }

  /** The command with this adapter's fault injection (per attempt) for `op`, if any. */
  private faulty<C extends SdkCommand>(op: StoreOp | undefined, command: C): C {
    return withFaults(command, op, this.faults, faultError);
  }
}
