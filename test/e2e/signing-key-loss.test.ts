import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { freePort, SERVER_ENTRY, startServer } from '../../scripts/lib/server-process.js';
import { HeadKeys } from '../../shared/domain/signed-head.js';
import { Ed25519Signer } from '../../shared/ports/signer.js';
import { runCliHere } from '../cli/in-process.js';

/**
 * Issue 20 item 5, embedded: `npm start`'s server over a data directory whose signing key is
 * deleted (or replaced) after it signed heads refuses to start, naming the key and the way
 * out; `hefesto keys rotate-signing --lost` starts a new key and keeps the lost public key
 * published, so the old receipts keep verifying; a plain rotation does the same with the old
 * key at hand. Before, a missing key was replaced at the next start without a word.
 */

const ROOT = 'signing-loss-root-key-0123456789';

describe('the embedded server and its signing key', () => {
  let dir: string;
  let dataDir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hefesto-key-loss-'));
    dataDir = join(dir, 'data');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const env = () => ({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: ROOT });
  const auth = { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' };

  /** Starts the server, appends one event, stops it; returns the append's receipt. */
  const appendOnce = async () => {
    const server = await startServer(env());
    try {
      const res = await fetch(`${server.url}/v1/streams/run-1/events`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ events: [{ type: 'note', payload: { at: Date.now() } }] }),
      });
      expect(res.status).toBe(201);
      const keys = await (await fetch(`${server.url}/v1/signing-keys`, { headers: auth })).json();
      return { receipt: ((await res.json()) as { treeHead: { keyId: string } }).treeHead, keys };
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  };

  /** A start that must fail: its exit status and output (the built server, as `npm start`). */
  const refusedStart = async () =>
    spawnSync(process.execPath, [SERVER_ENTRY], {
      env: { ...process.env, ...env(), PORT: String(await freePort()), HEFESTO_LOG_LEVEL: 'warn' },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('refuses to start when signing-key.pem is deleted, until rotate-signing --lost', async () => {
    const { receipt } = await appendOnce();
    unlinkSync(join(dataDir, 'signing-key.pem'));

    const refused = await refusedStart();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`heads signed by key ${receipt.keyId} exist`);
    expect(refused.stderr).toContain('hefesto keys rotate-signing --lost');
    expect(refused.stdout).not.toContain('listening');

    // Without --lost (the key file a refused start left is not the lost key): still refused.
    const plain = await runCliHere(['keys', 'rotate-signing'], env());
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain(`heads signed by key ${receipt.keyId} exist`);

    const lost = await runCliHere(['keys', 'rotate-signing', '--lost'], env());
    expect(lost.stderr).toBe('');
    expect(lost.code).toBe(0);
    const after = await appendOnce();
    expect(after.receipt.keyId).not.toBe(receipt.keyId);
    // The old receipt verifies under the published keys: its public key stays published.
    expect(new HeadKeys(after.keys).verify(receipt)).toMatchObject({ ok: true });
    expect(new HeadKeys(after.keys).verify(after.receipt)).toMatchObject({ ok: true });
  }, 180_000);

  it('refuses to start when signing-key.pem is replaced by another key; a rotation is accepted', async () => {
    const { receipt } = await appendOnce();
    const path = join(dataDir, 'signing-key.pem');
    const original = (await import('node:fs')).readFileSync(path, 'utf8');
    writeFileSync(path, Ed25519Signer.generate().exportPkcs8Pem(), { mode: 0o600 });
    const refused = await refusedStart();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`heads signed by key ${receipt.keyId} exist`);

    writeFileSync(path, original, { mode: 0o600 }); // the backup restored
    const rotated = await runCliHere(['keys', 'rotate-signing'], env());
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain(`retired ${receipt.keyId} (still published)`);
    const after = await appendOnce();
    expect(after.receipt.keyId).not.toBe(receipt.keyId);
    expect(new HeadKeys(after.keys).verify(receipt)).toMatchObject({ ok: true });
  }, 180_000);
});
