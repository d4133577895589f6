import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { type EmbeddedServer, runCliHere, startEmbedded } from './in-process.js';

/**
 * The CLI against the embedded server in this process: the tenant comes from the key (no
 * --tenant), a --tenant that contradicts it is refused instead of looking like tampering,
 * and errors honour --json.
 */

const ROOT_KEY = 'root-key-for-cli-tenant-tests-0123456789';

describe('the CLI reads the tenant from its key', () => {
  let server: EmbeddedServer;
  let acme: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    server = await startEmbedded({ HEFESTO_API_KEY: ROOT_KEY });
    const root = new HefestoClient({ baseUrl: server.url, apiKey: ROOT_KEY });
    acme = (await root.createKey({ tenant: 'acme', scopes: ['read', 'write'] })).key;
    const client = new HefestoClient({ baseUrl: server.url, apiKey: acme });
    for (let i = 0; i < 3; i++) await client.append('run-a', [{ type: 'note', payload: { i } }]);
    // The same stream id in tenant default, with other events: a wrong genesis cannot pass.
    await root.append('run-a', [{ type: 'other', payload: 0 }]);
    env = { HEFESTO_URL: server.url, HEFESTO_KEY: acme };
  });
  afterAll(async () => {
    await server?.close();
  });

  it("verifies from genesis with the key's tenant, without --tenant", async () => {
    const run = await runCliHere(['verify', 'run-a', '--local', '--json'], env);

    expect(run.stderr).not.toContain('error');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, seq: 3 });
  });

  it("exports with the key's tenant in the header, and tails verified events", async () => {
    const out = join(server.dataDir, '..', 'run-a.ndjson');
    const exported = await runCliHere(['export', 'run-a', '--out', out, '--json'], env);
    const tailed = await runCliHere(['events', 'tail', 'run-a', '--verify'], env);

    expect(exported.code, exported.stderr).toBe(0);
    const header = JSON.parse(readFileSync(out, 'utf8').split('\n')[0] ?? '');
    expect(header).toMatchObject({ tenant: 'acme', streamId: 'run-a', head: { seq: 3 } });
    expect(tailed.code, tailed.stderr).toBe(0);
    expect(tailed.stdout.trim().split('\n')).toHaveLength(3);
  });

  it("refuses a --tenant (or HEFESTO_TENANT) that is not the key's, instead of reporting seq 1 bad", async () => {
    const [flag, variable] = await Promise.all([
      runCliHere(['verify', 'run-a', '--local', '--tenant', 'default'], env),
      runCliHere(['export', 'run-a'], { ...env, HEFESTO_TENANT: 'globex' }),
    ]);

    expect(flag.code).toBe(2);
    expect(flag.stdout).toBe('');
    expect(flag.stderr).toMatch(
      /^error: ErrTenantMismatch: --tenant \(or HEFESTO_TENANT\) says "default", but the key belongs to tenant "acme"/,
    );
    expect(flag.stderr).not.toContain('first bad seq');
    expect(variable.code).toBe(2);
    expect(variable.stderr).toContain('"globex", but the key belongs to tenant "acme"');
  });

  it('says who the key is', async () => {
    const run = await runCliHere(['whoami', '--json'], env);

    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      tenant: 'acme',
      scopes: ['read', 'write'],
      operator: false,
    });
  });

  describe('errors with --json', () => {
    it('are one JSON object on stderr with the code, the HTTP status and a non-zero exit', async () => {
      const run = await runCliHere(['streams', 'get', 'nope', '--json'], env);

      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] ?? '')).toEqual({
        error: {
          code: 'ErrStreamNotFound',
          message: 'stream nope not found',
          status: 404,
          requestId: expect.any(String),
        },
      });
    });

    it('cover usage errors (exit 2, no help hint) and never show the key', async () => {
      const wrongKey = 'hk_0123456789abcdef_wrongwrongwrongwrongwrongwrongwrongwrong123';
      const [usage, unauthorized] = await Promise.all([
        runCliHere(['frobnicate', '--json'], env),
        runCliHere(['streams', 'get', 'run-a', '--json', '--key', wrongKey], env),
      ]);

      expect(usage.code).toBe(2);
      expect(JSON.parse(usage.stderr)).toMatchObject({ error: { code: 'ErrUsage' } });
      expect(usage.stderr).not.toContain('--help');
      expect(unauthorized.code).toBe(1);
      expect(JSON.parse(unauthorized.stderr)).toMatchObject({
        error: { code: 'ErrUnauthorized', status: 401 },
      });
      expect(unauthorized.stderr + unauthorized.stdout).not.toContain(wrongKey);
    });
  });

  describe('compact', () => {
    it('refuses a data directory that does not exist, once, and creates nothing', async () => {
      const missing = join(server.dataDir, '..', 'no-such-dir');

      const run = await runCliHere(['compact'], { HEFESTO_DATA_DIR: missing });

      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: ErrDataDirNotFound: no data directory at .*no-such-dir: /);
      expect(existsSync(missing)).toBe(false);
    });

    it('reports a bad server setting by its code, not as an internal error', async () => {
      const run = await runCliHere(['compact', '--json'], {
        HEFESTO_DATA_DIR: server.dataDir,
        HEFESTO_SNAPSHOT_EVERY: 'often',
      });

      expect(run.code).toBe(1);
      expect(JSON.parse(run.stderr)).toMatchObject({ error: { code: 'ErrInvalidInput' } });
    });
  });
});
