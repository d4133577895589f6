import { beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../infra/config.js';
import { logicalId, resourcesOf, type Synthesized, statementsOfRole, synth } from './synth.js';

/**
 * The witness bucket in the stack (infra/witness.ts): its own bucket with Object Lock in
 * compliance mode and versioning, never the data bucket; only the compactor may write it and
 * is pointed at it.
 */
let dev: Synthesized;
let prod: Synthesized;
beforeAll(() => {
  dev = synth(resolveConfig('dev'), { bundle: false });
  prod = synth(resolveConfig('prod'), { bundle: false });
}, 240_000);

const fnEnv = (s: Synthesized, fn: { node: { defaultChild?: unknown } }) => {
  const props = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, fn)]
    ?.Properties;
  return (
    (props?.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {}
  );
};

describe.each([
  ['dev', () => dev, 1],
  ['prod', () => prod, 3650],
] as const)('the witness bucket (%s)', (_name, get, days) => {
  it('is a separate bucket with Object Lock in compliance mode and versioning', () => {
    const s = get();
    const witnessId = logicalId(s.stack, s.stack.witness.bucket);
    const dataId = logicalId(s.stack, s.stack.storage.bucket);
    expect(witnessId).not.toBe(dataId);
    const buckets = resourcesOf(s.template, 'AWS::S3::Bucket');
    const witness = buckets[witnessId];
    expect(witness?.Properties).toMatchObject({
      ObjectLockEnabled: true,
      VersioningConfiguration: { Status: 'Enabled' },
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: days } },
      },
    });
    expect(witness?.DeletionPolicy).toBe('Retain');
    // The data bucket is not locked by the witness (its own lock is a separate option).
    expect(buckets[dataId]?.Properties?.ObjectLockEnabled ?? false).toBe(false);
  });

  it('is written by the compactor alone, which is pointed at it', () => {
    const s = get();
    const witnessId = logicalId(s.stack, s.stack.witness.bucket);
    const compactor = statementsOfRole(s.template, logicalId(s.stack, s.stack.compactor.role));
    const api = statementsOfRole(s.template, logicalId(s.stack, s.stack.api.role));
    const onWitness = (st: typeof api) =>
      st.filter((x) => JSON.stringify(x.Resource).includes(witnessId));
    expect(
      onWitness(compactor)
        .flatMap((x) => x.Action)
        .sort(),
    ).toEqual([
      's3:GetObject',
      's3:GetObjectVersion',
      's3:ListBucket',
      's3:ListBucketVersions',
      's3:PutObject',
      's3:PutObjectRetention',
    ]);
    expect(onWitness(api)).toEqual([]);
    expect(JSON.stringify(fnEnv(s, s.stack.compactor.fn).HEFESTO_WITNESS_BUCKET)).toContain(
      witnessId,
    );
    expect(fnEnv(s, s.stack.api.fn).HEFESTO_WITNESS_BUCKET).toBeUndefined();
  });
});
