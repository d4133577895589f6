import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KmsKeyWrapper } from '../../shared/adapters/aws/kms-key-wrapper.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import {
  ContentSealedError,
  InvalidFormatError,
  UnavailableError,
} from '../../shared/domain/errors.js';
import { FakeKms } from '../support/fake-kms.js';

/**
 * The KMS key wrapper (shared/adapters/aws/kms-key-wrapper.ts) through the SDK's real
 * KMSClient against a fake KMS speaking its JSON protocol (test/support/fake-kms.ts): the
 * encryption context binds a data key to its tenant, stream and key id; the keyring asks KMS
 * once per stream, never per append; throttling is retried then 503; a disabled key or a
 * denied role is a clear 503; no key material reaches an error.
 */

let kms: FakeKms;
const ctx = { tenant: 'acme', stream: 'run-1', keyId: 'k1' };
const wrapper = (attempts = 4) =>
  new KmsKeyWrapper({
    client: kms.client(),
    keyArn: kms.keyArn,
    attempts,
    sleep: async () => {},
  });

beforeEach(async () => {
  kms = await new FakeKms().start();
});
afterEach(() => kms.stop());

describe('KmsKeyWrapper against the fake KMS', () => {
  it('unwraps what it generated under the same context, and names its key', async () => {
    const w = wrapper();
    expect(w.id).toBe(`kms:${kms.keyArn}`);
    const { secret, wrapped } = await w.generate(ctx);
    expect(secret.length).toBe(32);
    expect(wrapped.includes(secret)).toBe(false);
    expect(await w.unwrap(ctx, wrapped)).toEqual(secret);
    // the context went to KMS with the purpose the key policy requires
    expect(JSON.parse(kms.bodies[0] ?? '{}').EncryptionContext).toEqual({
      purpose: 'hefesto/v1/stream-key',
      ...ctx,
    });
  });

  it("refuses to unwrap under another tenant's, stream's or key id's context", async () => {
    const w = wrapper();
    const { wrapped } = await w.generate(ctx);
    for (const other of [
      { ...ctx, tenant: 'globex' },
      { ...ctx, stream: 'run-2' },
      { ...ctx, keyId: 'k2' },
    ]) {
      await expect(w.unwrap(other, wrapped)).rejects.toBeInstanceOf(InvalidFormatError);
    }
  });

  it('retries throttling, then answers 503 ErrUnavailable with a retry-after', async () => {
    kms.throttleNext = 2;
    const { secret } = await wrapper(3).generate(ctx);
    expect(secret.length).toBe(32);
    expect(kms.calls.GenerateDataKey).toBe(3);

    kms.throttleNext = 10;
    const err = await wrapper(3)
      .generate(ctx)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).toMatchObject({ code: 'ErrUnavailable', retryAfterMs: 1000 });
    expect(kms.calls.GenerateDataKey).toBe(6);
  });

  it('a disabled key and a denied role are clear 503s, not retried', async () => {
    const w = wrapper();
    const { wrapped } = await w.generate(ctx);
    kms.enabled = false;
    const before = kms.calls.Decrypt;
    const disabled = await w.unwrap(ctx, wrapped).catch((e: unknown) => e);
    expect(disabled).toBeInstanceOf(UnavailableError);
    expect((disabled as UnavailableError).detail).toMatch(/disabled or scheduled for deletion/);
    expect(kms.calls.Decrypt).toBe(before + 1);

    kms.enabled = true;
    kms.deny = true;
    const denied = await w.generate(ctx).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(UnavailableError);
    expect((denied as UnavailableError).detail).toMatch(/role may not use the key/);
  });

  it('no error carries the wrapped blob or key material', async () => {
    const w = wrapper();
    const { secret, wrapped } = await w.generate(ctx);
    const errors = [await w.unwrap({ ...ctx, tenant: 'x' }, wrapped).catch((e: unknown) => e)];
    kms.enabled = false;
    errors.push(await w.unwrap(ctx, wrapped).catch((e: unknown) => e));
    for (const e of errors) {
      const text = JSON.stringify(e, Object.getOwnPropertyNames(e)) + String(e);
      const causeText = String((e as Error).cause);
      for (const needle of [
        secret.toString('base64'),
        wrapped.toString('base64'),
        secret.toString('hex'),
      ]) {
        expect(text.includes(needle)).toBe(false);
        expect(causeText.includes(needle)).toBe(false);
      }
    }
  });
});

describe('the stream keyring over KMS', () => {
  it('KMS calls per stream, never per append: a new stream, then one Decrypt per cold process', async () => {
    const records = new MemoryRecordStore();
    const keyring = new StreamKeyring(records, wrapper());
    const first = await keyring.forWrite('acme', 'run-1');
    for (let i = 0; i < 50; i++) {
      expect((await keyring.forWrite('acme', 'run-1')).keyId).toBe(first.keyId);
      await keyring.forRead('acme', 'run-1');
    }
    // the keyring opens the record it stored (stream-keyring.ts #load), so a new stream costs
    // one GenerateDataKey and one Decrypt; 100 more calls for the stream cost nothing
    expect(kms.calls).toEqual({ GenerateDataKey: 1, Decrypt: 1 });
    await keyring.forWrite('acme', 'run-2');
    expect(kms.calls).toEqual({ GenerateDataKey: 2, Decrypt: 2 });

    // a cold process: one Decrypt per stream, then cached
    const cold = new StreamKeyring(records, wrapper());
    for (let i = 0; i < 20; i++) {
      expect((await cold.forRead('acme', 'run-1'))?.keys.commit).toEqual(first.keys.commit);
    }
    expect(kms.calls).toEqual({ GenerateDataKey: 2, Decrypt: 3 });
  });

  it("a key record moved into another tenant's partition does not open", async () => {
    const records = new MemoryRecordStore();
    const keyring = new StreamKeyring(records, wrapper());
    await keyring.forWrite('acme', 'run-1');
    const item = await records.get({ pk: 't#acme#s#run-1', sk: 'key' });
    if (!item) throw new Error('no key record');
    await records.put({ ...item, pk: 't#globex#s#run-1' });
    const cold = new StreamKeyring(records, wrapper());
    await expect(cold.forRead('globex', 'run-1')).rejects.toBeInstanceOf(ContentSealedError);
  });
});
