import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { HefestoClient } from '../../shared/client/client.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { systemClock } from '../../shared/ports/clock.js';
import { cliEnv, runCliHere } from './in-process.js';

/**
 * `hefesto compact`: one pass on the embedded data directory; one a running server owns is
 * compacted by that server (POST /v1/admin/compact) when the CLI has the operator key. The
 * server runs as its own process, as `npm start` does, so that it really holds the lock.
 */

const KEY = 'compact-cli-root-key-0123456789';
const BIN = fileURLToPath(new URL('../../bin/hefesto.mjs', import.meta.url));

/** `hefesto` as a child process in `cwd`, as a user runs it there. */
const cliIn = (cwd: string, args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: cliEnv(env),
    timeout: 60_000,
  });

interface Report {
  examined: number;
  compacted: number;
  errors: number;
}

describe('hefesto compact', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-cli-compact-'));
  const dataDir = join(dir, 'data');
  let server: ServerProcess | undefined;
  let tenantAdmin: string;
  const fill = async (stream: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${server?.url}/v1/streams/${stream}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events: [{ type: 'observation', payload: { i } }] }),
      });
      expect(res.status).toBe(201);
    }
  };

  beforeAll(async () => {
    server = await startServer({
      HEFESTO_DATA_DIR: dataDir,
      HEFESTO_API_KEY: KEY,
      HEFESTO_COMPACT_INTERVAL_MS: '0',
    });
    const root = new HefestoClient({ baseUrl: server.url, apiKey: KEY });
    tenantAdmin = (await root.createKey({ tenant: 'acme', scopes: ['admin'] })).key;
  });
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  describe('while a server owns the data directory', () => {
    it('without a key: one ErrDataDirInUse message saying how to go on', async () => {
      const run = await runCliHere(['compact'], { HEFESTO_DATA_DIR: dataDir });

      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: ErrDataDirInUse: the data directory .* is in use/);
      expect(lines[0]).toContain('pass --key');
      expect(lines[0]?.match(/in use/g)).toHaveLength(1);
    });

    it('with the operator key: that server runs the pass and the CLI prints its report', async () => {
      await fill('s', 20);

      const run = await runCliHere(['compact'], {
        HEFESTO_DATA_DIR: dataDir,
        HEFESTO_URL: server?.url ?? '',
        HEFESTO_KEY: KEY,
      });

      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain('asking the server at');
      const report = JSON.parse(run.stdout) as Report;
      expect(report).toMatchObject({ examined: 1, compacted: 1, errors: 0 });
    });

    it('with a tenant admin key: 403 from the server, as one ErrForbidden line', async () => {
      const run = await runCliHere(['compact', '--server'], {
        HEFESTO_URL: server?.url ?? '',
        HEFESTO_KEY: tenantAdmin,
      });

      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/^error: ErrForbidden: a compaction pass covers every tenant/);
    });
  });

  it('without HEFESTO_DATA_DIR and no ./.hefesto: refuses, and creates none', () => {
    const empty = mkdtempSync(join(dir, 'cwd-'));

    const run = cliIn(empty, ['compact'], {});

    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^error: ErrDataDirNotFound: no data directory at .*\.hefesto: /);
    expect(existsSync(join(empty, '.hefesto'))).toBe(false);
  });

  it('runs the pass itself once the server has stopped', async () => {
    await fill('t', 20);
    server?.child.kill('SIGTERM');
    expect(await server?.exited).toBe(0);
    server = undefined;

    const pass = await runCliHere(['compact'], { HEFESTO_DATA_DIR: dataDir });

    expect(pass.stderr).toBe('');
    expect(pass.code).toBe(0);
    expect(JSON.parse(pass.stdout)).toMatchObject({ examined: 1, compacted: 1, errors: 0 });
  });

  it('--until-done: passes until one reports more: false, each that left work having done some', async () => {
    // 1,000 one-event segments, appended on the stopped server's data directory.
    const { objects, records } = openLocalStores(dataDir);
    try {
      const ledger = new Ledger({ objects, records, clock: systemClock });
      for (let i = 0; i < 1_000; i++) {
        await ledger.appender.append({
          tenant: 'acme',
          stream: 'long',
          events: [{ type: 'observation', payload: { i } }],
        });
      }
    } finally {
      records.close();
      objects.close();
    }
    // 100 ms a pass: too little for 1,000 segments in one.
    const env = { HEFESTO_DATA_DIR: dataDir, HEFESTO_COMPACT_MAX_RUN_MS: '100' };

    const run = await runCliHere(['compact', '--until-done'], env);

    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const reports = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Report & { more: boolean; segmentsMerged: number });
    expect(reports.length).toBeGreaterThan(1);
    expect(reports.at(-1)?.more).toBe(false);
    for (const report of reports.slice(0, -1)) {
      expect(report.more).toBe(true);
      expect(report.segmentsMerged).toBeGreaterThan(0);
    }
    expect(reports.reduce((n, r) => n + r.segmentsMerged, 0)).toBeGreaterThanOrEqual(1_000);
    // Done: the next pass finds nothing left to merge.
    const again = await runCliHere(['compact'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ segmentsMerged: 0, more: false });
  });
});
