import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  checkPinnedKeyIds,
  loadSigningRing,
  rotateSigningSecret,
  type SecretSource,
  SigningKeyPinError,
} from '../../shared/adapters/aws/signing-secret.js';
import {
  checkSigningKeys,
  recordedSigningKeys,
  SigningKeyMissingError,
} from '../../shared/keys/signing-keys.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 5: a lost or replaced signing key is loud. The record of the keys that signed
 * heads (signing-keys.ts) is checked against the server's ring at every start, on memory,
 * local and the emulators (DynamoDB Local). The AWS secret path runs its real code
 * (signing-secret.ts: parse, derive, rotate, pin) behind its SecretSource port, with a fake
 * source: Secrets Manager is not emulated here.
 */

const SEED_1 = 'Vq3ZrTt9mK2pLx8WcN5bHy7JdE4gRa6Uf1sQo0iPkMvXnBwYzCeDlFhGjSuTaAbB';
const SEED_2 = 'Bb7dQw2ErT5yUi8oPa1sDf4gHj6kLz9xCv3bNm0qWeRtYuIoPaSdFgHjKlZxCvBn';
const SEED_3 = 'Zx9cVb8nM7aS6dF5gH4jK3lQ2wE1rT0yUiOpPaSdFgHjKlZxCvBnMqWeRtYuIoPz';

/** A secret whose versions the test changes, as `put-secret-value` would. */
const secret = (value: string) => {
  const state = { value };
  const source: SecretSource = { getSecretString: async () => state.value };
  return { state, source };
};

let arns = 0;
/** A cold start: a new secret id, so loadSigningRing's per-process cache is not reused. */
const coldStart = async (source: SecretSource) => loadSigningRing(source, `arn:test:${++arns}`);

describe.each(allStores.filter((f) => f.enabled))('signing keys on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(() => stores.cleanup());

  it('records the keys at the first start, then accepts the same ring again', async () => {
    const ring = new KeyRing(new FakeSigner('a'));
    await checkSigningKeys(stores.records, ring);
    expect((await recordedSigningKeys(stores.records)).map((k) => k.kid)).toEqual(['fake-a']);
    await expect(checkSigningKeys(stores.records, ring)).resolves.toBeUndefined();
  });

  it('refuses a ring that lost a key that signed heads (replaced without a rotation)', async () => {
    await checkSigningKeys(stores.records, new KeyRing(new FakeSigner('a')));
    const replaced = checkSigningKeys(stores.records, new KeyRing(new FakeSigner('b')));
    await expect(replaced).rejects.toBeInstanceOf(SigningKeyMissingError);
    await expect(replaced).rejects.toThrow(
      /heads signed by key fake-a exist, but the server's signing keys .* do not include it/,
    );
    // Nothing recorded for the refused key.
    expect((await recordedSigningKeys(stores.records)).map((k) => k.kid)).toEqual(['fake-a']);
  });

  it('accepts a rotation and records the new key; the ring from before it is refused then', async () => {
    const old = new KeyRing(new FakeSigner('a'));
    await checkSigningKeys(stores.records, old);
    const rotated = old.rotate(new FakeSigner('b'));
    await checkSigningKeys(stores.records, rotated);
    expect((await recordedSigningKeys(stores.records)).map((k) => k.kid)).toEqual([
      'fake-b',
      'fake-a',
    ]);
    await expect(checkSigningKeys(stores.records, old)).rejects.toThrow(/key fake-b exist/);
  });

  it('lets one of two first starts with different keys record, and refuses the other', async () => {
    const results = await Promise.allSettled([
      checkSigningKeys(stores.records, new KeyRing(new FakeSigner('x'))),
      checkSigningKeys(stores.records, new KeyRing(new FakeSigner('y'))),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await recordedSigningKeys(stores.records)).toHaveLength(1);
  });

  it('AWS: refuses a cold start on a secret changed without rotation, accepts a rotation', async () => {
    const { state, source } = secret(JSON.stringify({ v: 1, seed: SEED_1 }));
    const first = await coldStart(source);
    await checkSigningKeys(stores.records, first);
    // A new seed put as the secret's value (or the secret deleted and made again).
    state.value = JSON.stringify({ v: 1, seed: SEED_2 });
    await expect(checkSigningKeys(stores.records, await coldStart(source))).rejects.toThrow(
      new RegExp(`heads signed by key ${first.current.keyId} exist`),
    );
    // The rotation keeps the old key retired: accepted, and the new key recorded.
    state.value = rotateSigningSecret(JSON.stringify({ v: 1, seed: SEED_1 }), SEED_3);
    const rotated = await coldStart(source);
    await checkSigningKeys(stores.records, rotated);
    expect((await recordedSigningKeys(stores.records)).map((k) => k.kid)).toEqual([
      rotated.current.keyId,
      first.current.keyId,
    ]);
  });
});

describe('the stack pin of signing key ids (HEFESTO_SIGNING_KEY_IDS)', () => {
  it('refuses a secret whose key the stack does not pin, or that lost a pinned key', async () => {
    const v1 = JSON.stringify({ v: 1, seed: SEED_1 });
    const one = await coldStart(secret(v1).source);
    const two = await coldStart(secret(rotateSigningSecret(v1, SEED_2)).source);
    const stray = await coldStart(secret(JSON.stringify({ v: 1, seed: SEED_3 })).source);
    const [k1, k2] = [one.current.keyId, two.current.keyId];

    expect(() => checkPinnedKeyIds(one, [])).not.toThrow(); // no pin (before the first pin)
    expect(() => checkPinnedKeyIds(one, [k1])).not.toThrow();
    expect(() => checkPinnedKeyIds(two, [k2, k1])).not.toThrow();
    // A changed secret version without rotation.
    expect(() => checkPinnedKeyIds(stray, [k1])).toThrow(SigningKeyPinError);
    expect(() => checkPinnedKeyIds(stray, [k1])).toThrow(
      new RegExp(`holds key ${stray.current.keyId} .*but the stack pins ${k1}`),
    );
    // Rotated, but the pin not updated yet: refused until the new id is pinned.
    expect(() => checkPinnedKeyIds(two, [k1])).toThrow(SigningKeyPinError);
    // An older version made current again: the pinned new key is not in it.
    expect(() => checkPinnedKeyIds(one, [k2, k1])).toThrow(
      new RegExp(`${k2} is not in the secret`),
    );
  });
});
