import { type App, Duration, Tags, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import {
  type FrontDoor,
  type HefestoConfig,
  type HefestoOverrides,
  isStage,
  isTarget,
  resolveConfig,
} from './config.js';
import { HefestoStack } from './hefesto-stack.js';

/** Adds one Hefesto stack to `app`, named `Hefesto-{stage}`. */
export const addHefesto = (app: App, config: HefestoConfig): HefestoStack => {
  const stack = new HefestoStack(app, `Hefesto-${config.stage}`, {
    config,
    description: `Hefesto (${config.stage}): durable state for AI agents on S3 and DynamoDB`,
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Tags.of(stack).add('project', 'hefesto');
  Tags.of(stack).add('stage', config.stage);
  return stack;
};

/**
 * Checks the app with the AWS Solutions rules of cdk-nag (v3: a CDK validation plugin). A
 * finding that is not acknowledged stops `cdk synth` and `cdk deploy`. Every
 * acknowledgement sits next to its resource (`Validations.of(...).acknowledge`) with its
 * reason, and is copied into the template's metadata (`cdk_nag.rules_to_suppress`) so the
 * deployed template keeps the audit trail.
 */
export const addNagChecks = (app: App): void => {
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true }),
  );
};

/**
 * The config from CDK context (`-c key=value`):
 *
 * | key                      | values                               | default       |
 * | ------------------------ | ------------------------------------ | ------------- |
 * | stage                    | dev, prod                            | dev           |
 * | target                   | aws, localstack                      | aws           |
 * | frontDoor                | http-api, function-url               | per target    |
 * | objectLock               | governance:DAYS, compliance:DAYS     | none          |
 * | alarmTopicArn            | an SNS topic ARN                     | none          |
 * | apiReservedConcurrency   | a whole number                       | none (shared) |
 * | compactionEveryMinutes   | a whole number                       | 15            |
 * | segmentsExpressZone      | an AZ id (use1-az4): segments on     | none          |
 * |                          | S3 Express One Zone                  |               |
 */
export const configFromContext = (app: App): HefestoConfig => {
  const get = (key: string): string | undefined => {
    const value: unknown = app.node.tryGetContext(key);
    return value === undefined || value === '' ? undefined : String(value);
  };
  const fail = (key: string, expected: string): never => {
    throw new Error(`context ${key}=${get(key)}: expected ${expected}`);
  };
  const whole = (key: string): number | undefined => {
    const raw = get(key);
    if (raw === undefined) return undefined;
    return /^\d+$/.test(raw) ? Number(raw) : fail(key, 'a whole number');
  };

  const stage = get('stage') ?? 'dev';
  if (!isStage(stage)) return fail('stage', 'dev or prod');
  const target = get('target') ?? 'aws';
  if (!isTarget(target)) return fail('target', 'aws or localstack');

  const overrides: HefestoOverrides = {};
  const frontDoor = get('frontDoor');
  if (frontDoor !== undefined) {
    if (frontDoor !== 'http-api' && frontDoor !== 'function-url') {
      return fail('frontDoor', 'http-api or function-url');
    }
    overrides.frontDoor = frontDoor satisfies FrontDoor;
  }
  const lock = get('objectLock');
  if (lock !== undefined) {
    const match = /^(governance|compliance):(\d+)$/.exec(lock);
    if (!match) return fail('objectLock', 'governance:DAYS or compliance:DAYS');
    overrides.objectLock = {
      mode: match[1] as 'governance' | 'compliance',
      days: Number(match[2]),
    };
  }
  const topicArn = get('alarmTopicArn');
  if (topicArn !== undefined) overrides.alarms = { topicArn };
  const reserved = whole('apiReservedConcurrency');
  if (reserved !== undefined) overrides.api = { reservedConcurrency: reserved };
  const kids = get('signingKeyIds');
  if (kids !== undefined) {
    if (!/^[\w.-]+(,[\w.-]+)*$/.test(kids)) return fail('signingKeyIds', 'KID[,KID...]');
    overrides.signingKeyIds = kids.split(',');
  }
  const every = whole('compactionEveryMinutes');
  if (every !== undefined) overrides.compaction = { every: Duration.minutes(every) };
  const zone = get('segmentsExpressZone');
  if (zone !== undefined) {
    if (!/^[a-z]{2,4}\d-az\d+$/.test(zone))
      return fail('segmentsExpressZone', 'an AZ id (use1-az4)');
    overrides.segmentsExpressZone = zone;
  }
  return resolveConfig(stage, target, overrides);
};
