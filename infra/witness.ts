import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type CfnBucket,
  ObjectLockRetention,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { HefestoConfig } from './config.js';

/** How long a published head stays locked: 10 years where data is retained, 1 day elsewhere. */
export const witnessLockDays = (config: HefestoConfig): number => (config.retainData ? 3650 : 1);

/**
 * The witness bucket (docs/proofs.md, "Witness"): where the compactor publishes the signed
 * tree heads of the streams that moved, one object per tenant per run. A bucket of its own,
 * never the data bucket: Object Lock is a bucket setting, needs versioning, and would keep
 * every superseded segment; here every version is locked in COMPLIANCE mode by default, so
 * nobody (root included) can delete or overwrite a published head, or shorten its lock,
 * before it ends. A lock protects versions, not keys: audits read every version.
 *
 * Only the compactor may write it (PutObject, with the lock headers: PutObjectRetention) and
 * read it back (for its own audits); the API function gets nothing. The bucket is always
 * retained: its locked versions could not be deleted anyway.
 */
export class WitnessBucket extends Construct {
  readonly bucket: Bucket;

  constructor(scope: Construct, id: string, config: HefestoConfig, accessLogs?: Bucket) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      encryption: BucketEncryption.KMS_MANAGED,
      bucketKeyEnabled: true,
      versioned: true,
      objectLockEnabled: true,
      objectLockDefaultRetention: ObjectLockRetention.compliance(
        Duration.days(witnessLockDays(config)),
      ),
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: accessLogs && 'witness/',
      removalPolicy: RemovalPolicy.RETAIN,
    });
    if (!accessLogs) {
      Validations.of(this.bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          'Server access logs are a per-stage choice (on in prod); the witness is written once ' +
          'per compactor run by one role and its versions are locked.',
      });
    }
  }

  /** Lets the compactor publish and read back; points it at the bucket. */
  connect(fn: LambdaFunction): void {
    fn.addEnvironment('HEFESTO_WITNESS_BUCKET', this.bucket.bucketName);
    const objects = this.bucket.arnForObjects('w/*');
    fn.addToRolePolicy(
      new PolicyStatement({
        sid: 'PublishWitness',
        actions: ['s3:PutObject', 's3:PutObjectRetention', 's3:GetObject', 's3:GetObjectVersion'],
        resources: [objects],
      }),
    );
    fn.addToRolePolicy(
      new PolicyStatement({
        sid: 'ListWitness',
        actions: ['s3:ListBucket', 's3:ListBucketVersions'],
        resources: [this.bucket.bucketArn],
      }),
    );
    const bucketId = Stack.of(this).resolve((this.bucket.node.defaultChild as CfnBucket).logicalId);
    if (fn.role) {
      Validations.of(fn.role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/w/*]`,
        reason: 'Witness objects are named per tenant and run (w/{tenant}/{time}-{run}.json).',
      });
    }
  }
}
