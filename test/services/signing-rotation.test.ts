import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rotateSigningSecret, signingRingOf } from '../../shared/adapters/aws/signing-secret.js';
import { checkConsistency, verifyReceipt } from '../../shared/client/proofs.js';
import { HeadKeys } from '../../shared/domain/signed-head.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { batch, manualClock } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Key rotation end to end (docs/proofs.md, "Keys"): a deployment reads signing secret v1,
 * appends; the secret is rotated (a new version) and a new cold start reads v2 over the same
 * stores. The new key id signs every new head, the old one stays in the published key set,
 * and heads of both verify and are consistent with each other.
 */

const SEED_1 = 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2';
const SEED_2 = 'Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2H1g0F9e8D7c6B5a4Z3y2X1w0V9u8';

describe.each(allStores.filter((f) => f.enabled))('signing key rotation on $name', (factory) => {
  let stores: StorePair;
  const clock = manualClock();
  beforeEach(async () => {
    stores = await factory.make(clock);
  });
  afterEach(() => stores.cleanup());

  it('signs new heads with the new key id; old key ids stay published and verifiable', async () => {
    const v1 = JSON.stringify({ v: 1, seed: SEED_1 });
    const before = new Ledger({ ...stores, clock }, { signing: signingRingOf(v1) });
    const scope = (streamId: string) => ({ tenant: 'acme', streamId });
    const r1 = (
      await before.appender.append({ tenant: 'acme', stream: 'run-1', events: batch('a', 3) })
    ).response.treeHead;
    const o1 = (
      await before.appender.append({ tenant: 'beta', stream: 'run-1', events: batch('b', 2) })
    ).response.treeHead;

    const after = new Ledger(
      { ...stores, clock },
      { signing: signingRingOf(rotateSigningSecret(v1, SEED_2)) },
    );
    clock.advance(1000);
    const r2 = (
      await after.appender.append({ tenant: 'acme', stream: 'run-1', events: batch('c', 2) })
    ).response.treeHead;
    const published = new HeadKeys(after.proofs.jwks());
    const kids = after.proofs.jwks().keys.map((k) => k.kid);
    expect(kids).toHaveLength(2);
    expect(r1?.keyId).toBe(kids[1]);
    expect(r2?.keyId).toBe(kids[0]);
    // Old heads still verify under the published set; new ones are signed by the new key.
    const old = verifyReceipt(r1, published, scope('run-1'));
    const now = verifyReceipt(
      await after.proofs.treeHead('acme', 'run-1'),
      published,
      scope('run-1'),
    );
    expect(now.keyId).toBe(kids[0]);
    expect(now.treeSize).toBe(5);
    checkConsistency(
      old,
      now,
      await after.proofs.consistency('acme', 'run-1', old.treeSize, now.treeSize),
    );
    expect(verifyReceipt(o1, published, { tenant: 'beta', streamId: 'run-1' }).keyId).toBe(kids[1]);
    // A key set without the old key (a removed key) no longer verifies its heads.
    const onlyNew = new HeadKeys({ keys: [after.proofs.jwks().keys[0]] });
    expect(onlyNew.verify(r1).ok).toBe(false);
  });
});
