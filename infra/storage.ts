import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type CfnBucket,
  type LifecycleRule,
  ObjectLockRetention,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { HefestoConfig } from './config.js';

/** ObjectStore port operations (shared/ports/object-store.ts) a function may call. */
export type ObjectOp = 'get' | 'head' | 'list' | 'putIfAbsent' | 'putIfMatch' | 'delete';
/** RecordStore port operations (shared/ports/record-store.ts) a function may call. */
export type RecordOp = 'get' | 'put' | 'update' | 'delete' | 'query' | 'transact' | 'check';

export interface StorageAccess {
  objects: readonly ObjectOp[];
  records: readonly RecordOp[];
}

/**
 * DynamoDB actions per RecordStore operation. A transaction (TransactWriteItems) needs the
 * action of each of its items (PutItem, UpdateItem, DeleteItem, ConditionCheckItem for
 * `check`), so `transact` adds only GetItem: after an unknown outcome the adapter reads the
 * touched items back with TransactGetItems, which is authorized as GetItem.
 */
const RECORD_ACTIONS: Record<RecordOp, string> = {
  get: 'dynamodb:GetItem',
  put: 'dynamodb:PutItem',
  update: 'dynamodb:UpdateItem',
  delete: 'dynamodb:DeleteItem',
  query: 'dynamodb:Query',
  transact: 'dynamodb:GetItem',
  check: 'dynamodb:ConditionCheckItem',
};

/**
 * The data of the service: one S3 bucket for immutable objects (segments, snapshots) and one
 * DynamoDB table for records (heads, segment and snapshot index, idempotency, API keys,
 * leases, compaction markers: all under string keys `pk`/`sk`, TTL on `ttl`).
 *
 * `connect` is the only place that grants access to them: it gives a function exactly the
 * actions of the port operations it names and the environment that points it at them.
 *
 * Versioning: off unless Object Lock is on. Every object is written once, create-only
 * (`If-None-Match: *`) or replaced only by compare-and-swap (`If-Match`), and the functions'
 * role cannot write any other way, so versions would only keep garbage the compactor
 * deletes. Object Lock (a prop) requires versioning; then noncurrent versions expire once
 * their lock has passed.
 *
 * Lifecycle: never expires current objects. Retention is the compactor's job because it
 * records the hash at the pruning point; an object that vanished by lifecycle would make the
 * chain unverifiable and read as tampering.
 */
export class HefestoStorage extends Construct {
  readonly bucket: Bucket;
  readonly table: Table;
  /** The customer managed key of the bucket, if the config asks for one. */
  readonly key: Key | undefined;
  /** The server access log bucket, when the config asks for access logs. */
  readonly accessLogs: Bucket | undefined;
  private readonly config: HefestoConfig;

  constructor(scope: Construct, id: string, config: HefestoConfig) {
    super(scope, id);
    this.config = config;
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const lock = config.objectLock;

    this.key = config.customerManagedKey
      ? new Key(this, 'ObjectsKey', {
          description: `Hefesto ${config.stage}: SSE-KMS key of the object bucket`,
          enableKeyRotation: true,
          removalPolicy,
        })
      : undefined;

    const accessLogs = config.serverAccessLogs ? this.accessLogBucket(removalPolicy) : undefined;
    this.accessLogs = accessLogs;

    this.bucket = new Bucket(this, 'Objects', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: this.key ? BucketEncryption.KMS : BucketEncryption.KMS_MANAGED,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      versioned: lock !== undefined,
      objectLockEnabled: lock !== undefined,
      objectLockDefaultRetention: lock && objectLockRetention(lock.mode, lock.days),
      lifecycleRules: lifecycleRules(config),
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: accessLogs && 'objects/',
      removalPolicy,
      // Locked objects cannot be deleted, so a locked bucket is never emptied automatically.
      autoDeleteObjects: !config.retainData && lock === undefined,
    });
    if (!accessLogs) {
      Validations.of(this.bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Server access logs are a per-stage choice (on in prod). Without them every API ' +
          'request is still logged by the HTTP API access log and the request log.',
      });
    }

    this.table = new Table(this, 'Records', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'ttl',
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: config.retainData,
      removalPolicy,
    });
  }

  /**
   * Points `fn` at the bucket and table and grants it exactly the actions behind `access`.
   * S3 writes are allowed only as conditional writes when the config says so (the default).
   */
  connect(fn: LambdaFunction, access: StorageAccess): void {
    fn.addEnvironment('HEFESTO_BUCKET', this.bucket.bucketName);
    fn.addEnvironment('HEFESTO_TABLE', this.table.tableName);
    if (this.config.target === 'localstack')
      fn.addEnvironment('HEFESTO_S3_FORCE_PATH_STYLE', 'true');
    for (const statement of this.objectStatements(access.objects)) fn.addToRolePolicy(statement);
    const recordActions = [...new Set(access.records.map((op) => RECORD_ACTIONS[op]))].sort();
    if (recordActions.length > 0) {
      fn.addToRolePolicy(
        new PolicyStatement({
          sid: 'Records',
          actions: recordActions,
          resources: [this.table.tableArn],
        }),
      );
    }
    const bucketId = Stack.of(this).resolve((this.bucket.node.defaultChild as CfnBucket).logicalId);
    const objects = `Resource::<${bucketId}.Arn>/*`;
    if (access.objects.length > 0 && fn.role) {
      Validations.of(fn.role).acknowledge({
        id: `AwsSolutions-IAM5[${objects}]`,
        reason:
          'Objects are addressed by key (t/{tenant}/s/{stream}/...), created at run time; ' +
          'the object actions are scoped to this one bucket and listed one by one.',
      });
    }
  }

  private objectStatements(ops: readonly ObjectOp[]): PolicyStatement[] {
    const has = (...wanted: ObjectOp[]) => wanted.some((op) => ops.includes(op));
    const objects = this.bucket.arnForObjects('*');
    const statements: PolicyStatement[] = [];
    const conditional = this.config.conditionalWritesOnly;
    if (has('get', 'head')) {
      statements.push(
        new PolicyStatement({
          sid: 'ReadObjects',
          actions: ['s3:GetObject'],
          resources: [objects],
        }),
      );
    }
    // ListBucket also turns a read of a missing key into 404 (NoSuchKey) instead of 403,
    // which the adapter reads as "absent": get/head need it as much as list does.
    if (has('get', 'head', 'list')) {
      statements.push(
        new PolicyStatement({
          sid: 'ListObjects',
          actions: ['s3:ListBucket'],
          resources: [this.bucket.bucketArn],
        }),
      );
    }
    const put = (sid: string, header: 's3:if-none-match' | 's3:if-match') =>
      new PolicyStatement({
        sid,
        actions: ['s3:PutObject'],
        resources: [objects],
        conditions: conditional ? { Null: { [header]: 'false' } } : undefined,
      });
    if (conditional) {
      if (has('putIfAbsent')) statements.push(put('CreateObjectsIfAbsent', 's3:if-none-match'));
      if (has('putIfMatch')) statements.push(put('ReplaceObjectsIfMatch', 's3:if-match'));
    } else if (has('putIfAbsent', 'putIfMatch')) {
      statements.push(put('WriteObjects', 's3:if-none-match'));
    }
    if (has('delete')) {
      statements.push(
        new PolicyStatement({
          sid: 'DeleteObjects',
          actions: ['s3:DeleteObject'],
          resources: [objects],
        }),
      );
    }
    if (this.key)
      statements.push(...this.keyStatements(has('get', 'head'), has('putIfAbsent', 'putIfMatch')));
    return statements;
  }

  /** SSE-KMS through S3 only: GenerateDataKey to write, Decrypt to read. */
  private keyStatements(read: boolean, write: boolean): PolicyStatement[] {
    const key = this.key;
    if (!key) return [];
    const viaS3 = {
      StringEquals: { 'kms:ViaService': `s3.${Stack.of(this).region}.amazonaws.com` },
    };
    const statement = (sid: string, action: string) =>
      new PolicyStatement({
        sid,
        effect: Effect.ALLOW,
        actions: [action],
        resources: [key.keyArn],
        conditions: viaS3,
      });
    return [
      ...(read ? [statement('DecryptObjects', 'kms:Decrypt')] : []),
      ...(write ? [statement('EncryptObjects', 'kms:GenerateDataKey')] : []),
    ];
  }

  private accessLogBucket(removalPolicy: RemovalPolicy): Bucket {
    const bucket = new Bucket(this, 'AccessLogs', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      // S3 server access logging can deliver only to SSE-S3 buckets.
      encryption: BucketEncryption.S3_MANAGED,
      lifecycleRules: [{ id: 'expire-logs', expiration: Duration.days(this.config.logRetention) }],
      removalPolicy,
      autoDeleteObjects: removalPolicy === RemovalPolicy.DESTROY,
    });
    return bucket;
  }
}

const objectLockRetention = (mode: 'governance' | 'compliance', days: number) =>
  mode === 'governance'
    ? ObjectLockRetention.governance(Duration.days(days))
    : ObjectLockRetention.compliance(Duration.days(days));

const lifecycleRules = (config: HefestoConfig): LifecycleRule[] => {
  const rules: LifecycleRule[] = [
    { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
  ];
  const lock = config.objectLock;
  if (lock) {
    // A locked version cannot go before its lock ends; expiring it later is all S3 allows.
    const days = Math.max(config.noncurrentVersionDays, lock.days + 1);
    rules.push(
      { id: 'expire-noncurrent-versions', noncurrentVersionExpiration: Duration.days(days) },
      { id: 'remove-expired-delete-markers', expiredObjectDeleteMarker: true },
    );
  }
  return rules;
};
