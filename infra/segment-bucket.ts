import { RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { CfnDirectoryBucket } from 'aws-cdk-lib/aws-s3express';
import { Construct } from 'constructs';

/**
 * Opt-in (`-c segmentsExpressZone=use1-az4`): the ledger's segments in an S3 Express One Zone
 * directory bucket, the cheapest option docs/operations.md names for an append. Segments
 * stay immutable objects under conditional puts (If-None-Match: *); everything else (snapshots,
 * tiles, chunks) stays in the data bucket. One zone: losing it loses the segments in it
 * (docs/operations.md, "Segments on S3 Express One Zone").
 *
 * Access to a directory bucket is by session (`s3express:CreateSession`, which the SDK calls);
 * its session mode is ReadWrite, so the API and the compactor get the one action on the
 * bucket, and the service's own code keeps every write conditional. Directory buckets are
 * encrypted (SSE-S3) by default.
 */
export class SegmentBucket extends Construct {
  readonly bucket: CfnDirectoryBucket;

  constructor(scope: Construct, id: string, props: { zoneId: string; retain: boolean }) {
    super(scope, id);
    this.bucket = new CfnDirectoryBucket(this, 'Bucket', {
      dataRedundancy: 'SingleAvailabilityZone',
      locationName: props.zoneId,
    });
    this.bucket.applyRemovalPolicy(props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY);
  }

  /** Lets `fn` open sessions on the bucket; points it at the bucket. */
  connect(fn: LambdaFunction): void {
    fn.addEnvironment('HEFESTO_SEGMENT_BUCKET', this.bucket.ref);
    fn.addToRolePolicy(
      new PolicyStatement({
        sid: 'SegmentSessions',
        actions: ['s3express:CreateSession'],
        resources: [this.bucket.attrArn],
      }),
    );
  }
}
