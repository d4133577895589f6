import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_BUNDLE_LIMIT_BYTES, coldStart } from '../../bench/bundle.js';
import { workLedgerSettings } from '../../functions/wiring/work.js';
import {
  BUNDLE_FILE,
  esbuildOptions,
  FORBIDDEN_IN_BUNDLE,
  REPO_ROOT,
} from '../../infra/bundling.js';
import { resolveConfig } from '../../infra/config.js';
import { parseAwsSettings, RUNTIME_RESERVE_MIB } from '../../shared/config/settings.js';
import { memoryOf } from '../../shared/domain/state-v2/index.js';
import type { MemoryPool } from '../../shared/state/memory-pool.js';
import {
  actionsOf,
  allStatements,
  logicalId,
  resourcesOf,
  type Synthesized,
  statementsOfRole,
  synth,
} from './synth.js';

/**
 * The CDK stack, synthesized once per stage config, offline: dev (with its bundles), prod
 * defaults, prod with every option on, and the LocalStack target.
 */
let dev: Synthesized;
let prod: Synthesized;
let hardened: Synthesized;
let local: Synthesized;

const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:hefesto-alarms';
const KEY_ARN = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

beforeAll(() => {
  dev = synth(resolveConfig('dev'), { bundle: true });
  prod = synth(resolveConfig('prod'), { bundle: false });
  hardened = synth(
    resolveConfig('prod', 'aws', {
      objectLock: { mode: 'compliance', days: 30 },
      alarms: { topicArn: TOPIC },
      api: { reservedConcurrency: 50 },
      compactor: { reservedConcurrency: 2 },
      service: { snapshotEvery: 50, compactEvery: 32, retentionDays: 90 },
      compaction: { maxStreams: 500, graceSeconds: 1800 },
    }),
    { bundle: false },
  );
  local = synth(resolveConfig('dev', 'localstack'), { bundle: false });
}, 240_000);

const ids = (s: Synthesized) => ({
  bucket: logicalId(s.stack, s.stack.storage.bucket),
  table: logicalId(s.stack, s.stack.storage.table),
  apiRole: logicalId(s.stack, s.stack.api.role),
  compactorRole: logicalId(s.stack, s.stack.compactor.role),
  apiFn: logicalId(s.stack, s.stack.api.fn),
  compactorFn: logicalId(s.stack, s.stack.compactor.fn),
});

const fnProps = (s: Synthesized, id: string) =>
  resourcesOf(s.template, 'AWS::Lambda::Function')[id]?.Properties ?? {};

const envOf = (s: Synthesized, id: string) =>
  (fnProps(s, id).Environment as { Variables: Record<string, unknown> }).Variables;

describe('cdk-nag AwsSolutions', () => {
  it.each([
    ['dev', () => dev],
    ['prod', () => prod],
    ['prod with every option', () => hardened],
    ['localstack', () => local],
  ])('finds nothing unacknowledged in %s', (_name, get) => {
    const { nag } = get();
    expect(nag.violations.map((v) => v.ruleName)).toEqual([]);
    expect(nag.success).toBe(true);
  });

  it('keeps every acknowledgement, with its reason, in the template metadata', () => {
    const acknowledged = new Map<string, string>();
    for (const resource of Object.values(prod.template.toJSON().Resources) as Array<{
      Metadata?: { cdk_nag?: { rules_to_suppress: Array<{ id: string; reason: string }> } };
    }>) {
      for (const rule of resource.Metadata?.cdk_nag?.rules_to_suppress ?? []) {
        acknowledged.set(rule.id.replace(/\[.*\]$/, ''), rule.reason);
      }
    }
    expect([...acknowledged.keys()].sort()).toEqual([
      'AwsSolutions-APIG4',
      'AwsSolutions-IAM5',
      'AwsSolutions-SMG4', // the signing key secret (infra/signing-key.ts)
    ]);
    for (const reason of acknowledged.values()) expect(reason.length).toBeGreaterThan(40);
  });
});

describe('bucket', () => {
  it('blocks public access, requires TLS 1.2 and encrypts with SSE-KMS and a bucket key', () => {
    for (const s of [dev, prod]) {
      s.template.hasResourceProperties('AWS::S3::Bucket', {
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [
            Match.objectLike({
              BucketKeyEnabled: true,
              ServerSideEncryptionByDefault: Match.objectLike({ SSEAlgorithm: 'aws:kms' }),
            }),
          ],
        },
      });
      const policy = JSON.stringify(resourcesOf(s.template, 'AWS::S3::BucketPolicy'));
      expect(policy).toContain('"aws:SecureTransport":"false"');
      expect(policy).toContain('"s3:TlsVersion":1.2');
    }
  });

  it('uses a rotated customer managed key in prod and the AWS managed key in dev', () => {
    prod.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    prod.template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          Match.objectLike({
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: 'aws:kms',
              KMSMasterKeyID: Match.anyValue(),
            },
          }),
        ],
      },
    });
    // dev: the AWS managed key for S3; its one KMS key is the content key (below)
    dev.template.resourceCountIs('AWS::KMS::Key', 1);
    prod.template.resourceCountIs('AWS::KMS::Key', 2);
    expect(JSON.stringify(resourcesOf(dev.template, 'AWS::S3::Bucket'))).not.toContain(
      logicalId(dev.stack, dev.stack.contentKey.key),
    );
  });

  it('is not versioned and never expires current objects unless Object Lock is asked for', () => {
    const bucket = (s: Synthesized) =>
      resourcesOf(s.template, 'AWS::S3::Bucket')[ids(s).bucket]?.Properties ?? {};
    for (const s of [dev, prod, hardened]) {
      const rules = (bucket(s).LifecycleConfiguration as { Rules: object[] }).Rules;
      for (const rule of rules) {
        expect(rule).not.toHaveProperty('ExpirationInDays');
        expect(rule).not.toHaveProperty('ExpirationDate');
      }
    }
    expect(bucket(prod).VersioningConfiguration).toBeUndefined();
    expect(bucket(hardened)).toMatchObject({
      VersioningConfiguration: { Status: 'Enabled' },
      ObjectLockEnabled: true,
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 30 } },
      },
    });
    // Noncurrent versions go once their lock has passed, never before.
    expect(JSON.stringify(bucket(hardened).LifecycleConfiguration)).toContain(
      '"NoncurrentVersionExpiration":{"NoncurrentDays":31}',
    );
  });

  it('logs server access to a log bucket in prod, and is retained there', () => {
    // Objects, access logs and the witness (infra/witness.ts).
    expect(Object.keys(resourcesOf(prod.template, 'AWS::S3::Bucket'))).toHaveLength(3);
    prod.template.hasResourceProperties('AWS::S3::Bucket', {
      LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'objects/' }),
    });
    prod.template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Retain' });
    dev.template.hasResource('AWS::S3::Bucket', { DeletionPolicy: 'Delete' });
  });
});

describe('table', () => {
  it('has string keys pk/sk, on-demand billing, point-in-time recovery and TTL on ttl', () => {
    for (const s of [dev, prod]) {
      s.template.hasResourceProperties('AWS::DynamoDB::Table', {
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      });
    }
  });

  it('is protected from deletion in prod only', () => {
    prod.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
    dev.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
  });
});

describe('functions', () => {
  it('run Node.js 24 on arm64, logging JSON to their own log group', () => {
    const { api, compactor } = dev.stack;
    for (const fn of [api, compactor]) {
      expect(fnProps(dev, logicalId(dev.stack, fn.fn))).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalId(dev.stack, fn.logGroup) } },
      });
    }
    dev.template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 7 });
    prod.template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 365 });
  });

  it('take reserved concurrency from the config, and none by default', () => {
    expect(fnProps(dev, ids(dev).apiFn).ReservedConcurrentExecutions).toBeUndefined();
    expect(fnProps(hardened, ids(hardened).apiFn).ReservedConcurrentExecutions).toBe(50);
    expect(fnProps(hardened, ids(hardened).compactorFn).ReservedConcurrentExecutions).toBe(2);
  });

  it("set the service's memory ceiling from the function's memory", () => {
    for (const s of [dev, prod, hardened]) {
      for (const id of [ids(s).apiFn, ids(s).compactorFn]) {
        const memorySize = Number(fnProps(s, id).MemorySize);
        expect(memorySize).toBe(1024);
        expect(envOf(s, id).HEFESTO_MEMORY_MIB).toBe(String(memorySize));
        const settings = parseAwsSettings({
          HEFESTO_BUCKET: 'bucket',
          HEFESTO_TABLE: 'table',
          HEFESTO_MEMORY_MIB: envOf(s, id).HEFESTO_MEMORY_MIB as string,
        });
        // One pool of it, less the runtime's reserve, for the caches and the requests.
        const pool = workLedgerSettings(settings).memory as MemoryPool;
        expect(pool.capacity).toBe((memorySize - RUNTIME_RESERVE_MIB) * 1024 * 1024);
        expect(
          settings.work.chunkCacheBytes +
            settings.work.stateCacheBytes +
            memoryOf({
              nodes: settings.work.budget.maxNodes,
              bytes: settings.work.budget.maxBytes,
            }),
        ).toBeLessThanOrEqual(pool.capacity);
      }
    }
  });

  it('get the environment the service settings parser accepts', () => {
    const env = envOf(dev, ids(dev).apiFn);
    expect(env).toEqual({
      HEFESTO_BUCKET: { Ref: ids(dev).bucket },
      HEFESTO_TABLE: { Ref: ids(dev).table },
      HEFESTO_API_KEY: { Ref: 'RootApiKey' },
      HEFESTO_LOG_LEVEL: 'info',
      HEFESTO_SIGNING_SECRET: { Ref: logicalId(dev.stack, dev.stack.signingKey.secret) },
      HEFESTO_KMS_KEY_ARN: {
        'Fn::GetAtt': [logicalId(dev.stack, dev.stack.contentKey.key), 'Arn'],
      },
      HEFESTO_MEMORY_MIB: '1024',
    });
    const concrete = Object.fromEntries(
      Object.entries(env).map(([k, v]) => [k, typeof v === 'string' ? v : `resolved-${k}`]),
    );
    concrete.HEFESTO_API_KEY = 'root-key-0123456789abcdef';
    concrete.HEFESTO_KMS_KEY_ARN = KEY_ARN;
    expect(parseAwsSettings(concrete)).toMatchObject({ logLevel: 'info', kmsKeyArn: KEY_ARN });
    // What the appends schedule for the compactor is spaced the same way in both functions.
    const shared = {
      HEFESTO_SNAPSHOT_EVERY: '50',
      HEFESTO_COMPACT_EVERY: '32',
      HEFESTO_RETENTION_DAYS: '90',
    };
    expect(envOf(hardened, ids(hardened).apiFn)).toMatchObject(shared);
    const compactor = envOf(hardened, ids(hardened).compactorFn);
    expect(compactor).toMatchObject({
      ...shared,
      HEFESTO_BUCKET: { Ref: ids(hardened).bucket },
      HEFESTO_TABLE: { Ref: ids(hardened).table },
      HEFESTO_COMPACT_MAX_STREAMS: '500',
      HEFESTO_COMPACT_GRACE_SECONDS: '1800',
    });
    const settings = parseAwsSettings({
      ...(compactor as Record<string, string>),
      HEFESTO_BUCKET: 'bucket',
      HEFESTO_TABLE: 'table',
      HEFESTO_WITNESS_BUCKET: 'witness',
      HEFESTO_KMS_KEY_ARN: KEY_ARN,
    });
    // The run budget ends before the function times out (2 minutes).
    expect(settings.compaction.maxRunMs).toBe(100_000);
    expect(settings.compaction.maxRunMs).toBeLessThan(
      Number(fnProps(hardened, ids(hardened).compactorFn).Timeout) * 1000,
    );
    expect(envOf(dev, ids(dev).compactorFn)).not.toHaveProperty('HEFESTO_API_KEY');
  });

  it('take the root API key from a NoEcho parameter that may stay empty', () => {
    dev.template.hasParameter('RootApiKey', {
      NoEcho: true,
      Default: '',
      AllowedPattern: '^$|^[\\x21-\\x7e]{16,512}$',
    });
  });

  it('run the compactor on an EventBridge schedule, without Lambda retries', () => {
    dev.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(15 minutes)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [ids(dev).compactorFn, 'Arn'] } })],
    });
    dev.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: ids(dev).compactorFn },
      MaximumRetryAttempts: 0,
    });
  });
});

describe('IAM', () => {
  it('names every action: no wildcard in any action of any policy', () => {
    for (const s of [dev, prod, hardened, local]) {
      for (const action of actionsOf(allStatements(s.template))) expect(action).not.toContain('*');
    }
  });

  it('gives the API function exactly what its services call', () => {
    const statements = statementsOfRole(prod.template, ids(prod).apiRole);
    expect(actionsOf(statements)).toEqual([
      'dynamodb:ConditionCheckItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'kms:Decrypt',
      'kms:GenerateDataKey',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
      'secretsmanager:GetSecretValue',
    ]);
  });

  it('lets the functions write objects only with If-None-Match or If-Match', () => {
    for (const role of [ids(prod).apiRole, ids(prod).compactorRole]) {
      const puts = statementsOfRole(prod.template, role).filter((s) => s.Action === 's3:PutObject');
      expect(puts.length).toBeGreaterThan(0);
      for (const put of puts) expect(Object.keys(put.Condition?.Null ?? {})).toHaveLength(1);
    }
    const conditionsOf = (role: string) =>
      statementsOfRole(prod.template, role)
        .filter((s) => s.Action === 's3:PutObject')
        .map((s) => s.Condition);
    // putIfAbsent (segments, snapshots, merged segments) and putIfMatch (a fenced writer's
    // orphan segment, replaced by compare-and-swap).
    for (const role of [ids(prod).apiRole, ids(prod).compactorRole]) {
      expect(conditionsOf(role)).toEqual([
        { Null: { 's3:if-none-match': 'false' } },
        { Null: { 's3:if-match': 'false' } },
      ]);
    }
  });

  it('grants every S3 and DynamoDB command the runtime adapters send to some function', () => {
    // The IAM actions that authorize each SDK command (TransactWriteItems: its items' own).
    const needs: Record<string, string[]> = {
      PutObjectCommand: ['s3:PutObject'],
      GetObjectCommand: ['s3:GetObject', 's3:ListBucket'],
      HeadObjectCommand: ['s3:GetObject', 's3:ListBucket'],
      ListObjectsV2Command: ['s3:ListBucket'],
      DeleteObjectCommand: ['s3:DeleteObject'],
      GenerateDataKeyCommand: ['kms:GenerateDataKey'],
      DecryptCommand: ['kms:Decrypt'],
      GetItemCommand: ['dynamodb:GetItem'],
      PutItemCommand: ['dynamodb:PutItem'],
      UpdateItemCommand: ['dynamodb:UpdateItem'],
      DeleteItemCommand: ['dynamodb:DeleteItem'],
      QueryCommand: ['dynamodb:Query'],
      TransactGetItemsCommand: ['dynamodb:GetItem'],
      TransactWriteItemsCommand: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
    };
    const sources = ['s3-object-store.ts', 'dynamo-record-store.ts'].map((f) =>
      readFileSync(join(REPO_ROOT, 'shared/adapters/aws', f), 'utf8'),
    );
    const sent = new Set(
      sources.flatMap((src) => [...src.matchAll(/new (\w+Command)\(/g)].map((m) => m[1])),
    );
    const granted = new Set(
      actionsOf([
        ...statementsOfRole(prod.template, ids(prod).apiRole),
        ...statementsOfRole(prod.template, ids(prod).compactorRole),
      ]),
    );
    for (const command of sent) {
      expect(needs, `map ${command} to its IAM actions`).toHaveProperty(command as string);
      for (const action of needs[command as string] ?? []) expect(granted).toContain(action);
    }
  });

  it('keeps the API function from deleting objects', () => {
    const statements = statementsOfRole(prod.template, ids(prod).apiRole);
    expect(actionsOf(statements)).not.toContain('s3:DeleteObject');
  });

  it('uses the bucket key through S3 only', () => {
    const kms = statementsOfRole(prod.template, ids(prod).apiRole).filter(
      (s) => String(s.Action).startsWith('kms:') && s.Sid !== 'StreamKeys',
    );
    expect(kms.length).toBeGreaterThan(0);
    for (const statement of kms) {
      expect(JSON.stringify(statement.Condition)).toContain('kms:ViaService');
    }
  });
});

describe('encryption at rest: the content key', () => {
  const keyId = (s: Synthesized) => logicalId(s.stack, s.stack.contentKey.key);
  const streamKeys = (s: Synthesized, role: string) =>
    statementsOfRole(s.template, role).filter((st) => st.Sid === 'StreamKeys');

  it('is a rotated KMS key, kept with the data on stages that retain it', () => {
    for (const s of [dev, prod]) {
      s.template.hasResourceProperties('AWS::KMS::Key', {
        EnableKeyRotation: true,
        PendingWindowInDays: 30,
      });
    }
    expect(resourcesOf(prod.template, 'AWS::KMS::Key')[keyId(prod)]).toMatchObject({
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(resourcesOf(dev.template, 'AWS::KMS::Key')[keyId(dev)]).toMatchObject({
      DeletionPolicy: 'Delete',
    });
  });

  it('passes its ARN to the API and the compactor, and to no other function', () => {
    for (const s of [dev, prod, hardened, local]) {
      const arn = { 'Fn::GetAtt': [keyId(s), 'Arn'] };
      expect(envOf(s, ids(s).apiFn).HEFESTO_KMS_KEY_ARN).toEqual(arn);
      expect(envOf(s, ids(s).compactorFn).HEFESTO_KMS_KEY_ARN).toEqual(arn);
      const others = Object.entries(resourcesOf(s.template, 'AWS::Lambda::Function')).filter(
        ([id]) => id !== ids(s).apiFn && id !== ids(s).compactorFn,
      );
      for (const [, fn] of others) expect(JSON.stringify(fn)).not.toContain(keyId(s));
    }
  });

  it('grants GenerateDataKey and Decrypt to the API, Decrypt to the compactor, under the stream-key context', () => {
    const condition = {
      StringEquals: { 'kms:EncryptionContext:purpose': 'hefesto/v1/stream-key' },
      'ForAllValues:StringEquals': {
        'kms:EncryptionContextKeys': ['purpose', 'tenant', 'stream', 'keyId'],
      },
    };
    for (const s of [dev, prod]) {
      const arn = { 'Fn::GetAtt': [keyId(s), 'Arn'] };
      expect(streamKeys(s, ids(s).apiRole)).toEqual([
        expect.objectContaining({
          Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
          Resource: arn,
          Condition: condition,
        }),
      ]);
      expect(streamKeys(s, ids(s).compactorRole)).toEqual([
        expect.objectContaining({ Action: 'kms:Decrypt', Resource: arn, Condition: condition }),
      ]);
      // no other statement of any policy names the key
      const naming = allStatements(s.template).filter((st) =>
        JSON.stringify(st.Resource).includes(keyId(s)),
      );
      expect(naming).toHaveLength(2);
    }
  });
});

describe('HTTP API', () => {
  it('routes every request to the API function, throttled, with JSON access logs', () => {
    dev.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
    dev.template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: '$default' });
    dev.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
      IntegrationType: 'AWS_PROXY',
      PayloadFormatVersion: '2.0',
      IntegrationUri: { 'Fn::GetAtt': [ids(dev).apiFn, 'Arn'] },
    });
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 500, ThrottlingBurstLimit: 1000 },
      AccessLogSettings: {
        DestinationArn: Match.anyValue(),
        Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
      },
    });
  });

  it('is a function URL on LocalStack, pointed at path-style S3', () => {
    local.template.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
    local.template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
    expect(envOf(local, ids(local).apiFn)).toMatchObject({ HEFESTO_S3_FORCE_PATH_STYLE: 'true' });
  });
});

describe('observability', () => {
  it('counts ErrTamperedLedger log lines of both functions', () => {
    dev.template.resourcePropertiesCountIs(
      'AWS::Logs::MetricFilter',
      {
        FilterPattern: '{ ($.code = "ErrTamperedLedger") || ($.err.code = "ErrTamperedLedger") }',
      },
      2,
    );
    dev.template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.compaction.errors > 0 }',
      LogGroupName: { Ref: logicalId(dev.stack, dev.stack.compactor.logGroup) },
      MetricTransformations: [Match.objectLike({ MetricValue: '$.compaction.errors' })],
    });
  });

  it('alarms on 5xx rate, throttles, compactor failures and tampering', () => {
    const descriptions = Object.values(resourcesOf(dev.template, 'AWS::CloudWatch::Alarm')).map(
      (a) => String(a.Properties?.AlarmDescription),
    );
    for (const text of ['5xx', 'throttled', 'compactor failed', 'ErrTamperedLedger']) {
      expect(
        descriptions.some((d) => d.includes(text)),
        text,
      ).toBe(true);
    }
    expect(descriptions.some((d) => d.includes('DynamoDB throttled'))).toBe(true);
    dev.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('notifies the alarm topic when one is configured', () => {
    const alarms = Object.values(resourcesOf(hardened.template, 'AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBe(5);
    for (const alarm of alarms) expect(alarm.Properties?.AlarmActions).toEqual([TOPIC]);
  });

  it('outputs the API URL, bucket and table names', () => {
    for (const name of ['ApiUrl', 'BucketName', 'TableName', 'DashboardName']) {
      dev.template.hasOutput(name, {});
    }
  });
});

describe('bundles', () => {
  const bundleOf = (s: Synthesized, fnId: string) => {
    const code = fnProps(s, fnId).Code as { S3Key: string };
    return join(s.assemblyDir, `asset.${code.S3Key.replace(/\.zip$/, '')}`, BUNDLE_FILE);
  };

  it('keep the API bundle under 1 MB, minified', () => {
    const size = statSync(bundleOf(dev, ids(dev).apiFn)).size;
    expect(size).toBeLessThan(API_BUNDLE_LIMIT_BYTES);
  });

  it('never contain better-sqlite3 (the embedded server only)', () => {
    for (const fnId of [ids(dev).apiFn, ids(dev).compactorFn]) {
      const text = readFileSync(bundleOf(dev, fnId), 'utf8');
      for (const name of FORBIDDEN_IN_BUNDLE) {
        expect(text).not.toContain(name);
        expect(text).not.toContain(name.replace('-', '_'));
      }
    }
  });

  it('are what the bench builds, byte for byte (one set of esbuild options)', async () => {
    for (const name of ['api', 'compactor'] as const) {
      const fn = name === 'api' ? dev.stack.api.fn : dev.stack.compactor.fn;
      const out = await build({
        ...esbuildOptions(name, join(dev.assemblyDir, 'x.js')),
        write: false,
      });
      const deployed = readFileSync(bundleOf(dev, logicalId(dev.stack, fn)));
      expect(Buffer.compare(deployed, Buffer.from(out.outputFiles[0]?.contents ?? []))).toBe(0);
    }
  });

  it('serve /healthz from a fresh process with only @aws-sdk outside the bundle', () => {
    const result = coldStart(bundleOf(dev, ids(dev).apiFn));
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body)).toEqual({ ok: true });
  });
});
