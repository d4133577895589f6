import { Duration } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';

/**
 * What a deployment of Hefesto looks like: one stage (`dev` or `prod`) on one target (a real
 * AWS account or LocalStack). Every knob has a named default per stage; `resolveConfig`
 * merges the caller's overrides over them, so a stack is always built from a complete,
 * explicit config.
 *
 * | knob                   | dev              | prod             |
 * | ---------------------- | ---------------- | ---------------- |
 * | removal of data        | destroyed        | retained         |
 * | table deletion guard   | off              | on               |
 * | bucket key             | AWS managed      | customer managed |
 * | S3 server access logs  | off              | on               |
 * | log retention          | 1 week           | 1 year           |
 * | API throttling         | 50 rps, burst 100| 500 rps, burst 1000 |
 */

export type Stage = 'dev' | 'prod';
export type Target = 'aws' | 'localstack';

/** How requests reach the API function. LocalStack's free plan has no HTTP API (v2). */
export type FrontDoor = 'http-api' | 'function-url';

export interface ObjectLockConfig {
  /** `governance` can be lifted by a privileged principal; `compliance` by nobody. */
  mode: 'governance' | 'compliance';
  days: number;
}

export interface FunctionConfig {
  memoryMiB: number;
  timeout: Duration;
  /** Reserved concurrency; unset leaves the function in the account's shared pool. */
  reservedConcurrency?: number;
}

export interface HefestoConfig {
  stage: Stage;
  target: Target;
  frontDoor: FrontDoor;
  /** Keep bucket, table and key when the stack is deleted (and protect the table). */
  retainData: boolean;
  /** SSE-KMS with a customer managed key (rotated yearly) instead of the `aws/s3` key. */
  customerManagedKey: boolean;
  /**
   * The tree-head signing key ids the API function accepts (HEFESTO_SIGNING_KEY_IDS): its
   * secret's current key must be one of them, and each must be in the secret (current or
   * retired), else the cold start is refused. Unknown before the first deploy (Secrets
   * Manager makes the seed): deploy, read the id from GET /v1/signing-keys, then pin it
   * (`-c signingKeyIds=KID`); after a rotation, pin both (docs/operations.md).
   */
  signingKeyIds?: string[];
  /** Write-once objects for a fixed time; needs versioning. Off unless asked for. */
  objectLock?: ObjectLockConfig;
  /** S3 server access logs for every request on the data bucket, to a log bucket. */
  serverAccessLogs: boolean;
  /**
   * Allow S3 writes only with `If-None-Match` or `If-Match`: the functions can never
   * overwrite an object blindly. Every write of the ledger is conditional already.
   */
  conditionalWritesOnly: boolean;
  logRetention: RetentionDays;
  throttle: { rateLimit: number; burstLimit: number };
  api: FunctionConfig;
  compactor: FunctionConfig;
  compaction: {
    /** EventBridge schedule of the compactor. */
    every: Duration;
    /** Target size of a merged segment (HEFESTO_COMPACT_TARGET_BYTES). */
    targetBytes?: number;
    /** How long superseded objects stay readable (HEFESTO_COMPACT_GRACE_SECONDS). */
    graceSeconds?: number;
    /** Streams visited per run (HEFESTO_COMPACT_MAX_STREAMS). */
    maxStreams?: number;
  };
  /**
   * Ledger segments in an S3 Express One Zone directory bucket in this availability zone id
   * (e.g. `use1-az4`; segment-bucket.ts). Unset: segments stay in the data bucket.
   */
  segmentsExpressZone?: string;
  /** Days an object stays as a noncurrent version (versioned buckets only). */
  noncurrentVersionDays: number;
  /** Service settings passed to the functions; unset ones keep the service's defaults. */
  service: {
    logLevel: string;
    snapshotEvery?: number;
    /** Segments a stream gets between two compactor visits (HEFESTO_COMPACT_EVERY). */
    compactEvery?: number;
    /** Default retention of new streams, days; 0 keeps them forever (HEFESTO_RETENTION_DAYS). */
    retentionDays?: number;
    maxEvents?: number;
    maxPayloadBytes?: number;
    maxBodyBytes?: number;
  };
  alarms: {
    /** Percent of requests answered 5xx over 5 minutes. */
    serverErrorPercent: number;
    /** Below this many requests in 5 minutes the 5xx rate is not judged. */
    minRequests: number;
    /** SNS topic ARN notified by every alarm; unset: alarms only show on the dashboard. */
    topicArn?: string;
  };
}

export type HefestoOverrides = Partial<
  Omit<HefestoConfig, 'api' | 'compactor' | 'compaction' | 'service' | 'alarms' | 'throttle'>
> & {
  api?: Partial<FunctionConfig>;
  compaction?: Partial<HefestoConfig['compaction']>;
  compactor?: Partial<FunctionConfig>;
  service?: Partial<HefestoConfig['service']>;
  alarms?: Partial<HefestoConfig['alarms']>;
  throttle?: Partial<HefestoConfig['throttle']>;
};

const DEFAULTS: Record<Stage, Omit<HefestoConfig, 'target' | 'frontDoor'>> = {
  dev: {
    stage: 'dev',
    retainData: false,
    customerManagedKey: false,
    serverAccessLogs: false,
    conditionalWritesOnly: true,
    logRetention: RetentionDays.ONE_WEEK,
    throttle: { rateLimit: 50, burstLimit: 100 },
    api: { memoryMiB: 1024, timeout: Duration.seconds(15) },
    compactor: { memoryMiB: 1024, timeout: Duration.minutes(2) },
    compaction: { every: Duration.minutes(15) },
    noncurrentVersionDays: 7,
    service: { logLevel: 'info' },
    alarms: { serverErrorPercent: 5, minRequests: 20 },
  },
  prod: {
    stage: 'prod',
    retainData: true,
    customerManagedKey: true,
    serverAccessLogs: true,
    conditionalWritesOnly: true,
    logRetention: RetentionDays.ONE_YEAR,
    throttle: { rateLimit: 500, burstLimit: 1000 },
    api: { memoryMiB: 1024, timeout: Duration.seconds(15) },
    compactor: { memoryMiB: 1024, timeout: Duration.minutes(2) },
    compaction: { every: Duration.minutes(15) },
    noncurrentVersionDays: 30,
    service: { logLevel: 'info' },
    alarms: { serverErrorPercent: 1, minRequests: 20 },
  },
};

/** LocalStack: everything disposable, nothing that its free plan lacks. */
const LOCALSTACK: HefestoOverrides = {
  retainData: false,
  customerManagedKey: false,
  serverAccessLogs: false,
};

export const resolveConfig = (
  stage: Stage,
  target: Target = 'aws',
  overrides: HefestoOverrides = {},
): HefestoConfig => {
  const base = DEFAULTS[stage];
  const layered = { ...(target === 'localstack' ? LOCALSTACK : {}), ...overrides };
  return {
    ...base,
    frontDoor: target === 'localstack' ? 'function-url' : 'http-api',
    ...layered,
    stage,
    target,
    api: { ...base.api, ...overrides.api },
    compactor: { ...base.compactor, ...overrides.compactor },
    compaction: { ...base.compaction, ...overrides.compaction },
    service: { ...base.service, ...overrides.service },
    alarms: { ...base.alarms, ...overrides.alarms },
    throttle: { ...base.throttle, ...overrides.throttle },
  };
};

export const isStage = (value: unknown): value is Stage => value === 'dev' || value === 'prod';
export const isTarget = (value: unknown): value is Target =>
  value === 'aws' || value === 'localstack';
