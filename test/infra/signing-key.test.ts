import { App } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../infra/config.js';
import { configFromContext } from '../../infra/hefesto-app.js';
import { logicalId, resourcesOf, type Synthesized, statementsOfRole, synth } from './synth.js';

/**
 * The signing key in the stack (infra/signing-key.ts): a Secrets Manager secret whose seed
 * Secrets Manager generates at deploy, readable (GetSecretValue only) by the API function
 * alone, which is pointed at it; retained where data is.
 */
let dev: Synthesized;
let prod: Synthesized;
beforeAll(() => {
  dev = synth(resolveConfig('dev'), { bundle: false });
  prod = synth(resolveConfig('prod'), { bundle: false });
}, 240_000);

const envOf = (s: Synthesized, fn: { node: { defaultChild?: unknown } }) => {
  const props = resourcesOf(s.template, 'AWS::Lambda::Function')[logicalId(s.stack, fn)]
    ?.Properties;
  return (
    (props?.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {}
  );
};

describe('the signing key secret', () => {
  it('is generated at deploy by Secrets Manager: {"v":1,"seed":<64 alphanumerics>}', () => {
    const secrets = resourcesOf(dev.template, 'AWS::SecretsManager::Secret');
    const secret = secrets[logicalId(dev.stack, dev.stack.signingKey.secret)];
    expect(secret?.Properties?.GenerateSecretString).toEqual({
      SecretStringTemplate: '{"v":1}',
      GenerateStringKey: 'seed',
      PasswordLength: 64,
      ExcludePunctuation: true,
      IncludeSpace: false,
    });
    expect(secret?.Properties).not.toHaveProperty('SecretString');
    expect(secret?.DeletionPolicy).toBe('Delete');
    const kept = resourcesOf(prod.template, 'AWS::SecretsManager::Secret');
    expect(kept[logicalId(prod.stack, prod.stack.signingKey.secret)]?.DeletionPolicy).toBe(
      'Retain',
    );
  });

  it('is read by the API function alone, with GetSecretValue only', () => {
    for (const s of [dev, prod]) {
      const secretId = logicalId(s.stack, s.stack.signingKey.secret);
      const api = statementsOfRole(s.template, logicalId(s.stack, s.stack.api.role));
      const compactor = statementsOfRole(s.template, logicalId(s.stack, s.stack.compactor.role));
      const onSecret = (st: typeof api) =>
        st.filter((x) => JSON.stringify(x.Resource).includes(secretId));
      expect(onSecret(api).map((x) => x.Action)).toEqual(['secretsmanager:GetSecretValue']);
      expect(onSecret(compactor)).toEqual([]);
      expect(JSON.stringify(compactor)).not.toContain('secretsmanager');
      expect(envOf(s, s.stack.api.fn).HEFESTO_SIGNING_SECRET).toEqual({ Ref: secretId });
      expect(envOf(s, s.stack.compactor.fn)).not.toHaveProperty('HEFESTO_SIGNING_SECRET');
    }
  });

  it('pins the valid key ids in the API function when they are configured, and only there', () => {
    // Unpinned (the first deploy: the seed, so the key id, is made by Secrets Manager).
    expect(envOf(dev, dev.stack.api.fn)).not.toHaveProperty('HEFESTO_SIGNING_KEY_IDS');
    const pinned = synth(resolveConfig('dev', 'aws', { signingKeyIds: ['kid-new', 'kid-old'] }), {
      bundle: false,
    });
    expect(envOf(pinned, pinned.stack.api.fn).HEFESTO_SIGNING_KEY_IDS).toBe('kid-new,kid-old');
    expect(envOf(pinned, pinned.stack.compactor.fn)).not.toHaveProperty('HEFESTO_SIGNING_KEY_IDS');
  }, 240_000);

  it('takes the pin from the signingKeyIds context, and refuses one that is not key ids', () => {
    const app = (context: Record<string, string>) => new App({ context });
    expect(configFromContext(app({})).signingKeyIds).toBeUndefined();
    expect(configFromContext(app({ signingKeyIds: 'kid-a,kid-b' })).signingKeyIds).toEqual([
      'kid-a',
      'kid-b',
    ]);
    expect(() => configFromContext(app({ signingKeyIds: 'kid a;b' }))).toThrow(
      /context signingKeyIds=kid a;b: expected KID\[,KID...\]/,
    );
  });
});
