import { describe, expect, it } from 'vitest';
import {
  loadSigningRing,
  rotateSigningSecret,
  type SecretSource,
  signingRingOf,
} from '../../shared/adapters/aws/signing-secret.js';
import { HeadKeys, signTreeHead } from '../../shared/domain/signed-head.js';

/**
 * The AWS signing key loader (signing-secret.ts) against a fake secret source: the secret
 * Secrets Manager generates becomes an Ed25519 key ring, read once per process; bad values
 * are refused without quoting them; rotation keeps the old key verifiable.
 */

const SEED_A = 'Vq3ZrTt9mK2pLx8WcN5bHy7JdE4gRa6Uf1sQo0iPkMvXnBwYzCeDlFhGjSuTaAbB';
const SEED_B = 'Bb7dQw2ErT5yUi8oPa1sDf4gHj6kLz9xCv3bNm0qWeRtYuIoPaSdFgHjKlZxCvBn';
const value = (seed: string) => JSON.stringify({ v: 1, seed });

const fakeSource = (values: Record<string, string | Error>) => {
  const calls: string[] = [];
  const source: SecretSource = {
    getSecretString: async (id) => {
      calls.push(id);
      const v = values[id];
      if (v === undefined) throw new Error(`no secret ${id}`);
      if (v instanceof Error) throw v;
      return v;
    },
  };
  return { source, calls };
};

const fields = {
  tenant: 'acme',
  streamId: 'run-1',
  treeBase: 0,
  treeSize: 1,
  rootHash: 'ab'.repeat(32),
  timestamp: 1,
};

describe('the signing secret loader', () => {
  it('reads the secret once per process and derives the same key from the same seed', async () => {
    const { source, calls } = fakeSource({ 'arn:a': value(SEED_A), 'arn:b': value(SEED_B) });
    const first = await loadSigningRing(source, 'arn:a');
    const again = await loadSigningRing(source, 'arn:a');
    expect(again).toBe(first);
    expect(calls).toEqual(['arn:a']);
    expect(first.current.keyId).toBe(signingRingOf(value(SEED_A)).current.keyId);
    const other = await loadSigningRing(source, 'arn:b');
    expect(other.current.keyId).not.toBe(first.current.keyId);
    const head = signTreeHead(fields, first.current);
    expect(new HeadKeys(first.jwks()).verify(head).ok).toBe(true);
    expect(first.jwks().keys).toEqual([
      expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', kid: first.current.keyId }),
    ]);
  });

  it('tries again after a failed read', async () => {
    const values: Record<string, string | Error> = { 'arn:flaky': new Error('throttled') };
    const { source, calls } = fakeSource(values);
    await expect(loadSigningRing(source, 'arn:flaky')).rejects.toThrow('throttled');
    values['arn:flaky'] = value(SEED_A);
    await expect(loadSigningRing(source, 'arn:flaky')).resolves.toBeDefined();
    expect(calls).toHaveLength(2);
  });

  it('refuses malformed secrets without quoting them', () => {
    for (const bad of [
      SEED_A,
      JSON.stringify({ v: 2, seed: SEED_A }),
      value('short'),
      value(`${SEED_A} x`),
      '{"v":1}',
    ]) {
      let message = '';
      try {
        signingRingOf(bad);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).not.toBe('');
      expect(message).not.toContain(SEED_A);
    }
  });

  it('rotates to a new seed: the new key signs, the old one stays published and verifiable', () => {
    const v1 = value(SEED_A);
    const old = signingRingOf(v1);
    const oldHead = signTreeHead(fields, old.current);
    const v2 = rotateSigningSecret(v1, SEED_B);
    const ring = signingRingOf(v2);
    expect(ring.current.keyId).not.toBe(old.current.keyId);
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([ring.current.keyId, old.current.keyId]);
    expect(ring.verifier().verify(oldHead).ok).toBe(true);
    // Twice: both old keys kept, newest first.
    const v3 = rotateSigningSecret(v2, `${SEED_A.slice(0, 40)}zzzzzzzzzzzzzzzzzzzzzzzz`);
    expect(
      signingRingOf(v3)
        .jwks()
        .keys.map((k) => k.kid)
        .slice(1),
    ).toEqual([ring.current.keyId, old.current.keyId]);
    expect(() => rotateSigningSecret(v1, SEED_A)).toThrow('new seed');
    expect(v2).not.toContain(SEED_A);
  });
});
