import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../infra/config.js';
import { configFromContext } from '../../infra/hefesto-app.js';
import { logicalId, resourcesOf, type Synthesized, statementsOfRole, synth } from './synth.js';

/**
 * Opt-in segments on S3 Express One Zone (infra/segment-bucket.ts): off by default; on, one
 * single-zone directory bucket whose sessions the API and the compactor may open, and which
 * both are pointed at (HEFESTO_SEGMENT_BUCKET). cdk-nag stays clean with no new suppression.
 */
let plain: Synthesized;
let express: Synthesized;
beforeAll(() => {
  plain = synth(resolveConfig('dev'), { bundle: false });
  express = synth(resolveConfig('prod', 'aws', { segmentsExpressZone: 'use1-az4' }), {
    bundle: false,
  });
}, 240_000);

const fnEnv = (s: Synthesized, fn: { node: { defaultChild?: unknown } }) => {
  const props = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, fn)]
    ?.Properties;
  return (
    (props?.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {}
  );
};

describe('segments on S3 Express One Zone', () => {
  it('is off unless asked for', () => {
    expect(plain.stack.segments).toBeUndefined();
    expect(resourcesOf(plain.template, 'AWS::S3Express::DirectoryBucket')).toEqual({});
    expect(fnEnv(plain, plain.stack.api.fn).HEFESTO_SEGMENT_BUCKET).toBeUndefined();
    expect(JSON.stringify(plain.template.toJSON())).not.toContain('s3express');
  });

  it('makes one single-zone directory bucket in the given zone, kept where data is', () => {
    const buckets = Object.values(resourcesOf(express.template, 'AWS::S3Express::DirectoryBucket'));
    expect(buckets).toHaveLength(1);
    expect(buckets[0]?.Properties).toMatchObject({
      DataRedundancy: 'SingleAvailabilityZone',
      LocationName: 'use1-az4',
    });
    expect(buckets[0]?.DeletionPolicy).toBe('Retain');
  });

  it('lets the API and the compactor open sessions on it, and points both at it', () => {
    const segments = express.stack.segments;
    if (!segments) throw new Error('no segment bucket');
    const id = express.stack.getLogicalId(segments.bucket);
    for (const fn of [express.stack.api, express.stack.compactor]) {
      expect(fnEnv(express, fn.fn).HEFESTO_SEGMENT_BUCKET).toEqual({ Ref: id });
      const onBucket = statementsOfRole(express.template, logicalId(express.stack, fn.role)).filter(
        (st) => JSON.stringify(st).includes('s3express'),
      );
      expect(onBucket).toEqual([
        {
          Sid: 'SegmentSessions',
          Effect: 'Allow',
          Action: 's3express:CreateSession',
          Resource: { 'Fn::GetAtt': [id, 'Arn'] },
        },
      ]);
    }
  });

  it('leaves cdk-nag AwsSolutions clean', () => {
    expect(express.nag.violations.map((v) => v.ruleName)).toEqual([]);
    expect(express.nag.success).toBe(true);
  });

  it('is asked for by context with an AZ id, and refuses anything else', () => {
    const app = (context: Record<string, string>) => new App({ context });
    expect(configFromContext(app({})).segmentsExpressZone).toBeUndefined();
    expect(configFromContext(app({ segmentsExpressZone: 'use1-az4' })).segmentsExpressZone).toBe(
      'use1-az4',
    );
    expect(() => configFromContext(app({ segmentsExpressZone: 'us-east-1a' }))).toThrow(
      /segmentsExpressZone/,
    );
  });
});
