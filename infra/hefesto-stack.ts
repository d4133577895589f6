import { CfnOutput, CfnParameter, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Construct } from 'constructs';
import { FUNCTION_ACCESS } from './access.js';
import type { HefestoConfig } from './config.js';
import { ContentKey } from './content-key.js';
import { FrontDoor } from './front-door.js';
import { HefestoFunction } from './functions.js';
import { Observability } from './observability.js';
import { SegmentBucket } from './segment-bucket.js';
import { SigningKey } from './signing-key.js';
import { HefestoStorage } from './storage.js';
import { WitnessBucket } from './witness.js';

export interface HefestoStackProps extends StackProps {
  config: HefestoConfig;
}

/**
 * The whole service in one stack:
 *
 * ```
 * client -> HTTP API ($default route, throttled, access log) -> api function -> S3 + DynamoDB
 * EventBridge schedule -> compactor function -> S3 + DynamoDB, witness bucket (Object Lock)
 * CloudWatch: metric filter (ErrTamperedLedger), alarms, dashboard
 * ```
 *
 * The root API key (tenant `default`, may manage every tenant's keys) is a NoEcho parameter:
 * it never appears in the template or the cdk.out assets, and later deploys keep it.
 */
export class HefestoStack extends Stack {
  readonly storage: HefestoStorage;
  readonly witness: WitnessBucket;
  /** Opt-in: segments on S3 Express One Zone (`segmentsExpressZone`). */
  readonly segments: SegmentBucket | undefined;
  readonly signingKey: SigningKey;
  readonly contentKey: ContentKey;
  readonly api: HefestoFunction;
  readonly compactor: HefestoFunction;
  readonly frontDoor: FrontDoor;
  readonly observability: Observability;

  constructor(scope: Construct, id: string, props: HefestoStackProps) {
    super(scope, id, props);
    const { config } = props;
    const removalPolicy = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;

    const rootApiKey = new CfnParameter(this, 'RootApiKey', {
      type: 'String',
      noEcho: true,
      default: '',
      allowedPattern: '^$|^[\\x21-\\x7e]{16,512}$',
      description:
        'Root API key (tenant default, manages the keys of every tenant): 16..512 printable ' +
        'characters, or empty for none. Kept across deploys unless given again.',
    });

    this.storage = new HefestoStorage(this, 'Storage', config);
    const service = serviceEnvironment(config);

    this.api = new HefestoFunction(this, 'Api', {
      name: 'api',
      description: `Hefesto ${config.stage}: HTTP API`,
      config: config.api,
      logRetention: config.logRetention,
      removalPolicy,
      environment: { ...service, HEFESTO_API_KEY: rootApiKey.valueAsString },
    });
    this.storage.connect(this.api.fn, FUNCTION_ACCESS.api);
    // The tree-head signing key: read by the API function alone (signing-key.ts).
    this.signingKey = new SigningKey(this, 'SigningKey', config);
    this.signingKey.connect(this.api.fn);
    // Encryption at rest: the KMS key that wraps the stream keys (content-key.ts), used by
    // the API and the compactor alone.
    this.contentKey = new ContentKey(this, 'ContentKey', config);
    this.contentKey.connect(this.api.fn, { generate: true });

    this.compactor = new HefestoFunction(this, 'Compactor', {
      name: 'compactor',
      description: `Hefesto ${config.stage}: scheduled compaction and retention`,
      config: config.compactor,
      logRetention: config.logRetention,
      removalPolicy,
      environment: { ...service, ...compactorEnvironment(config) },
      // A failed run is retried by the next scheduled one; the failure alarm reports it.
      retryAttempts: 0,
    });
    this.storage.connect(this.compactor.fn, FUNCTION_ACCESS.compactor);
    this.contentKey.connect(this.compactor.fn, { generate: false });
    // The witness: its own Object Lock bucket, written by the compactor alone (witness.ts).
    this.witness = new WitnessBucket(this, 'Witness', config, this.storage.accessLogs);
    this.witness.connect(this.compactor.fn);
    // Opt-in: the ledger's segments in a directory bucket (segment-bucket.ts).
    this.segments =
      config.segmentsExpressZone === undefined
        ? undefined
        : new SegmentBucket(this, 'Segments', {
            zoneId: config.segmentsExpressZone,
            retain: config.retainData,
          });
    this.segments?.connect(this.api.fn);
    this.segments?.connect(this.compactor.fn);
    const schedule = new Rule(this, 'CompactionSchedule', {
      description: `Hefesto ${config.stage}: runs the compactor`,
      schedule: Schedule.rate(config.compaction.every),
      targets: [new LambdaFunction(this.compactor.fn, { retryAttempts: 2 })],
    });

    this.frontDoor = new FrontDoor(this, 'FrontDoor', {
      config,
      handler: this.api.fn,
      removalPolicy,
      logRetention: config.logRetention,
    });

    this.observability = new Observability(this, 'Observability', {
      config,
      api: this.api.fn,
      apiLogs: this.api.logGroup,
      compactor: this.compactor.fn,
      compactorLogs: this.compactor.logGroup,
      schedule,
      table: this.storage.table,
      httpApi: this.frontDoor.httpApi,
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.frontDoor.url,
      description: 'Base URL of the API',
    });
    new CfnOutput(this, 'BucketName', { value: this.storage.bucket.bucketName });
    new CfnOutput(this, 'TableName', { value: this.storage.table.tableName });
    new CfnOutput(this, 'ContentKeyArn', {
      value: this.contentKey.key.keyArn,
      description: 'KMS key wrapping the stream keys (encryption at rest)',
    });
    new CfnOutput(this, 'WitnessBucketName', { value: this.witness.bucket.bucketName });
    new CfnOutput(this, 'DashboardName', {
      value: this.observability.dashboard.dashboardName,
    });
  }
}

/** Drops unset knobs: the service's own defaults apply to them. */
const defined = (pairs: Array<[string, number | undefined]>): Record<string, string> =>
  Object.fromEntries(
    pairs.flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]])),
  );

/**
 * HEFESTO_* settings of both functions. Those the appends use to schedule the compactor's
 * work (snapshot and marker spacing, default retention) must be the same in both.
 */
const serviceEnvironment = (config: HefestoConfig): Record<string, string> => {
  const { service } = config;
  return {
    HEFESTO_LOG_LEVEL: service.logLevel,
    ...defined([
      ['HEFESTO_SNAPSHOT_EVERY', service.snapshotEvery],
      ['HEFESTO_COMPACT_EVERY', service.compactEvery],
      ['HEFESTO_RETENTION_DAYS', service.retentionDays],
      ['HEFESTO_MAX_EVENTS', service.maxEvents],
      ['HEFESTO_MAX_PAYLOAD_BYTES', service.maxPayloadBytes],
      ['HEFESTO_MAX_BODY_BYTES', service.maxBodyBytes],
    ]),
  };
};

/** Time the compactor keeps, after its run budget, to log its report and return. */
const RUN_MARGIN_MS = 20_000;

/** The compactor's own settings; its run budget ends before the function's timeout. */
const compactorEnvironment = (config: HefestoConfig): Record<string, string> => {
  const { compaction } = config;
  const timeoutMs = config.compactor.timeout.toMilliseconds();
  return {
    HEFESTO_COMPACT_MAX_RUN_MS: String(Math.max(timeoutMs - RUN_MARGIN_MS, timeoutMs / 2)),
    ...defined([
      ['HEFESTO_COMPACT_TARGET_BYTES', compaction.targetBytes],
      ['HEFESTO_COMPACT_GRACE_SECONDS', compaction.graceSeconds],
      ['HEFESTO_COMPACT_MAX_STREAMS', compaction.maxStreams],
    ]),
  };
};
