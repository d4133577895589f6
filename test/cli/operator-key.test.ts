import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { runCliHere } from './in-process.js';

/**
 * The README's first CLI example with the key `npm start` prints at its first start: the
 * server runs as `npm start` runs it (no HEFESTO_API_KEY), and the key is read from its output.
 */

const KEY_PATTERN = /hk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}/;

const printedKey = async (server: ServerProcess): Promise<string> => {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    const key = KEY_PATTERN.exec(server.output())?.[0];
    if (key !== undefined) return key;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no key printed:\n${server.output()}`);
};

describe('the key printed at the first start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-cli-operator-'));
  let server: ServerProcess;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startServer({
      HEFESTO_DATA_DIR: join(dir, 'data'),
      HEFESTO_API_KEY: '',
      HEFESTO_COMPACT_INTERVAL_MS: '0',
    });
    env = { HEFESTO_URL: server.url, HEFESTO_KEY: await printedKey(server) };
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the operator key', async () => {
    const run = await runCliHere(['whoami', '--json'], env);

    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ tenant: 'default', operator: true });
  });

  it('runs `npx hefesto keys create --tenant acme --scopes read,write`', async () => {
    const created = await runCliHere(
      ['keys', 'create', '--tenant', 'acme', '--scopes', 'read,write', '--json'],
      env,
    );

    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout) as { key: string; tenant: string };
    expect(key.tenant).toBe('acme');
    const who = await runCliHere(['whoami', '--json'], { ...env, HEFESTO_KEY: key.key });
    expect(JSON.parse(who.stdout)).toMatchObject({
      tenant: 'acme',
      scopes: ['read', 'write'],
      operator: false,
    });
  });

  it('asks the server to compact', async () => {
    const run = await runCliHere(['compact', '--server'], env);

    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ errors: 0, more: false });
  });
});
