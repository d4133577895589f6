import { InvalidFormatError, UnavailableError } from '../../domain/errors.js';
import { sha256 } from '../../domain/hashing.js';
import { type Ed25519PublicJwk, parseJwks } from '../../domain/signed-head.js';
import { Ed25519Signer, KeyRing } from '../../ports/signer.js';

/**
 * AWS mode's signing keys: one Secrets Manager secret, created by the CDK stack with a value
 * Secrets Manager generates at deploy (infra/signing-key.ts), read once per cold start by the
 * API function alone (its role alone may GetSecretValue it). Its value:
 *
 *   {"v":1,"seed":"<64 random alphanumerics>","retired":[<public JWKs of retired keys>]}
 *
 * The Ed25519 private key is derived from the seed text, `SHA-256("hefesto/signing-seed/v1"
 * ‖ 0x00 ‖ UTF-8 seed)` (RFC 8032 keys are any 32 bytes), so Secrets Manager's own generator
 * makes the key: no custom resource holds key material, and no function may write secrets.
 * 64 characters of 62 give ~381 bits, hashed to the key's 256.
 *
 * Rotation (`rotateSigningSecret`, then a new secret version, e.g. `aws secretsmanager
 * put-secret-value`): a new seed signs every head from the next cold start on; the old
 * key's public JWK moves to `retired`, so `GET /v1/signing-keys` keeps it and its heads keep
 * verifying. Cold starts that loaded the old version sign with the old key until they end;
 * both verify.
 *
 * A changed secret without a rotation (a new seed whose `retired` lacks the old key, a
 * deleted version, an older version made current again) is refused at cold start, twice:
 * - the stack pins the valid key ids (HEFESTO_SIGNING_KEY_IDS, from the `signingKeyIds`
 *   context): the ring's current key must be one of them and each must be in the ring
 *   (`checkPinnedKeyIds`); a rotation adds the new id to the pin and deploys;
 * - the record of keys that signed heads (shared/keys/signing-keys.ts) must be in the
 *   ring, as in embedded mode.
 */

export interface SecretSource {
  /** The secret's current value (AWSCURRENT). */
  getSecretString(secretId: string): Promise<string>;
}

const SEED_TAG = 'hefesto/signing-seed/v1';
const SEED = /^[\x21-\x7e]{32,1024}$/;

const signerOfSeed = (seed: string): Ed25519Signer =>
  Ed25519Signer.fromSeed(
    sha256(Buffer.concat([Buffer.from(SEED_TAG), Buffer.of(0), Buffer.from(seed)])),
  );

interface SigningSecret {
  v: 1;
  seed: string;
  retired: Ed25519PublicJwk[];
}

const parse = (text: string): SigningSecret => {
  let value: { v?: unknown; seed?: unknown; retired?: unknown };
  try {
    value = JSON.parse(text);
  } catch {
    // Never quote the text: it is the key.
    throw new InvalidFormatError('the signing secret is not JSON');
  }
  if (value === null || typeof value !== 'object' || value.v !== 1) {
    throw new InvalidFormatError('the signing secret must be {"v":1,"seed":...}');
  }
  if (typeof value.seed !== 'string' || !SEED.test(value.seed)) {
    throw new InvalidFormatError('the signing secret seed must be 32..1024 printable characters');
  }
  const retired = value.retired === undefined ? [] : parseJwks({ keys: value.retired }).keys;
  return { v: 1, seed: value.seed, retired };
};

/** The key ring a secret value holds: its seed's key current, its retired keys published. */
export const signingRingOf = (text: string): KeyRing => {
  const secret = parse(text);
  return new KeyRing(signerOfSeed(secret.seed), secret.retired);
};

/** The secret value after a rotation to `newSeed`: the old key retired, newest first. */
export const rotateSigningSecret = (text: string, newSeed: string): string => {
  const secret = parse(text);
  const old = signerOfSeed(secret.seed);
  const next: SigningSecret = {
    v: 1,
    seed: parse(JSON.stringify({ v: 1, seed: newSeed })).seed,
    retired: [old.publicJwk, ...secret.retired.filter((k) => k.kid !== old.keyId)],
  };
  if (signerOfSeed(next.seed).keyId === old.keyId)
    throw new InvalidFormatError('rotate to a new seed');
  return JSON.stringify(next);
};

/**
 * The pin check: `pinned` (the stack's key ids; empty: no pin) must name the ring's current
 * key, and every pinned key must be in the ring (current or retired).
 *
 * @example
 * ```ts
 * checkPinnedKeyIds(await loadSigningRing(source, arn), settings.signingKeyIds);
 * ```
 */
export const checkPinnedKeyIds = (ring: KeyRing, pinned: readonly string[]): void => {
  if (pinned.length === 0) return;
  const inRing = new Set(ring.jwks().keys.map((k) => k.kid));
  const current = ring.current.keyId;
  const missing = pinned.filter((kid) => !inRing.has(kid));
  if (!pinned.includes(current) || missing.length > 0) {
    throw new SigningKeyPinError(
      `the signing secret holds key ${current} (retired: ${ring.retired.map((k) => k.kid).join(', ') || 'none'}), ` +
        `but the stack pins ${pinned.join(', ')}` +
        (missing.length > 0 ? ` and ${missing.join(', ')} is not in the secret` : '') +
        ': the secret changed without a rotation. Restore the secret version that holds the ' +
        'pinned keys, or rotate (rotateSigningSecret keeps the old key retired) and add the new ' +
        'key id to the signingKeyIds context (docs/operations.md, "Signing keys")',
    );
  }
};

/**
 * The signing secret does not hold the keys the stack pins.
 *
 * @example
 * ```ts
 * try { checkPinnedKeyIds(ring, pinned); } catch (err) { if (err instanceof SigningKeyPinError) log(err.message); }
 * ```
 */
export class SigningKeyPinError extends UnavailableError {}

const loaded = new Map<string, Promise<KeyRing>>();

/**
 * The ring of `secretId`, read once per process (a cold start): later calls answer the same
 * ring. A failed read is not kept, so the next invocation tries again.
 */
export const loadSigningRing = (source: SecretSource, secretId: string): Promise<KeyRing> => {
  let ring = loaded.get(secretId);
  if (!ring) {
    ring = source.getSecretString(secretId).then(signingRingOf);
    loaded.set(secretId, ring);
    ring.catch(() => loaded.delete(secretId));
  }
  return ring;
};

interface SecretsManagerModule {
  SecretsManagerClient: new (
    config: object,
  ) => {
    send(command: unknown): Promise<{ SecretString?: string }>;
  };
  GetSecretValueCommand: new (input: { SecretId: string }) => unknown;
}

/**
 * Secrets Manager as a SecretSource. The Lambda runtime provides the AWS SDK v3 (the bundle
 * keeps `@aws-sdk/*` external), so the client is imported when first used, not at build.
 */
export const secretsManagerSource = (): SecretSource => {
  const name = '@aws-sdk/client-secrets-manager';
  let client:
    | Promise<{
        sm: SecretsManagerModule;
        c: InstanceType<SecretsManagerModule['SecretsManagerClient']>;
      }>
    | undefined;
  return {
    getSecretString: async (secretId) => {
      client ??= (import(name) as Promise<SecretsManagerModule>).then((sm) => ({
        sm,
        c: new sm.SecretsManagerClient({}),
      }));
      const { sm, c } = await client;
      const out = await c.send(new sm.GetSecretValueCommand({ SecretId: secretId }));
      if (typeof out.SecretString !== 'string') {
        throw new InvalidFormatError('the signing secret has no string value');
      }
      return out.SecretString;
    },
  };
};
