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
  private readonly prefix: string;
  private readonly faults: FaultInjector | undefined;
  private readonly retry: RetryOptions | undefined;

  constructor(options: S3ObjectStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
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
            new HeadObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }),
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
    const out = await this.run('list', () =>
      this.client.send(
        this.faulty(
          'list',
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.prefix + prefix,
            StartAfter: options.after === undefined ? undefined : this.prefix + options.after,
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
          new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }),
        ),
        SEND_OPTIONS,
      ),
    );
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
            Bucket: this.bucket,
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
        this.faulty(op, new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key })),
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
