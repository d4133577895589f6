import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  loadKeyRing,
  loadOrCreateSigningKey,
  RETIRED_KEYS_FILE,
  rotateSigningKeyFile,
  SIGNING_KEY_FILE,
} from '../../shared/adapters/local/signing-key-file.js';
import { InvalidFormatError, InvalidInputError } from '../../shared/domain/errors.js';
import { signTreeHead } from '../../shared/domain/signed-head.js';
import { bundledScript, removeBundledScripts } from '../support/bundled-script.js';

const fields = {
  tenant: 'acme',
  streamId: 'run-1',
  treeBase: 0,
  treeSize: 1,
  rootHash: 'ab'.repeat(32),
  timestamp: 1,
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-keys-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));
afterAll(removeBundledScripts);

describe('signing key file', () => {
  it('is created with mode 0600 at first start and loaded afterwards', () => {
    const data = join(dir, 'data'); // not there yet: created too
    const first = loadOrCreateSigningKey(data);
    expect(first.created).toBe(true);
    expect(statSync(join(data, SIGNING_KEY_FILE)).mode & 0o777).toBe(0o600);
    const second = loadOrCreateSigningKey(data);
    expect(second.created).toBe(false);
    expect(second.signer.keyId).toBe(first.signer.keyId);
    expect(readdirSync(data)).toEqual([SIGNING_KEY_FILE]); // no temp file left
  });

  it('gives one key to processes that start at the same time', async () => {
    const run = promisify(execFile);
    const script = await bundledScript(`
      import { loadOrCreateSigningKey } from './shared/adapters/local/signing-key-file.ts';
      console.log(loadOrCreateSigningKey(process.argv[2]).signer.keyId);`);
    const children = Array.from({ length: 4 }, () => run(process.execPath, [script, dir]));
    const ids = (await Promise.all(children)).map((c) => c.stdout.trim());
    expect(new Set(ids).size).toBe(1);
    expect(loadOrCreateSigningKey(dir).signer.keyId).toBe(ids[0]);
  });

  it('refuses a key file others can read', () => {
    loadOrCreateSigningKey(dir);
    chmodSync(join(dir, SIGNING_KEY_FILE), 0o644);
    expect(() => loadOrCreateSigningKey(dir)).toThrow(/chmod 600/);
  });

  it('refuses a key file that is not an Ed25519 private key, without quoting it', () => {
    writeFileSync(join(dir, SIGNING_KEY_FILE), 'not a key: s3cr3t', { mode: 0o600 });
    const err = (() => {
      try {
        loadOrCreateSigningKey(dir);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err?.message).not.toContain('s3cr3t');
  });

  it('rotates: the new key signs, the old key stays published and verifies its heads', () => {
    const before = loadKeyRing(dir);
    const oldHead = signTreeHead(fields, before.current);
    const after = rotateSigningKeyFile(dir);
    expect(after.current.keyId).not.toBe(before.current.keyId);
    expect(statSync(join(dir, SIGNING_KEY_FILE)).mode & 0o777).toBe(0o600);
    const reloaded = loadKeyRing(dir);
    expect(reloaded.current.keyId).toBe(after.current.keyId);
    expect(reloaded.jwks().keys.map((k) => k.kid)).toEqual([
      after.current.keyId,
      before.current.keyId,
    ]);
    expect(reloaded.verifier().verify(oldHead)).toMatchObject({ ok: true });
    const newHead = signTreeHead(fields, reloaded.current);
    expect(newHead.keyId).toBe(after.current.keyId);
    rotateSigningKeyFile(dir);
    expect(loadKeyRing(dir).jwks().keys).toHaveLength(3);
    expect(loadKeyRing(dir).verifier().verify(oldHead)).toMatchObject({ ok: true });
    expect(readdirSync(dir).sort()).toEqual([SIGNING_KEY_FILE, RETIRED_KEYS_FILE]);
  });

  it('survives a rotation that stopped after publishing the old key as retired', () => {
    const ring = loadKeyRing(dir);
    // Step 1 of a rotation done, step 3 not: the current key is also listed as retired.
    writeFileSync(join(dir, RETIRED_KEYS_FILE), JSON.stringify({ keys: [ring.current.publicJwk] }));
    const reloaded = loadKeyRing(dir);
    expect(reloaded.current.keyId).toBe(ring.current.keyId);
    expect(reloaded.jwks().keys).toHaveLength(1);
  });

  it('fails closed on a damaged retired-keys file', () => {
    loadKeyRing(dir);
    writeFileSync(join(dir, RETIRED_KEYS_FILE), '{"keys": [');
    expect(() => loadKeyRing(dir)).toThrow(InvalidFormatError);
  });
});
