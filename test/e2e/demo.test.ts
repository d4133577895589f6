import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/server-process.js';

/** `npm run demo` is part of the test command: crash-resume with observation replay. */
describe('npm run demo', () => {
  // As a user runs it: no HEFESTO_TRUST_FILE, and a home directory (a temporary one here)
  // that the demo must leave alone: its agents keep their trusted heads in its own data dir.
  const home = mkdtempSync(join(tmpdir(), 'hefesto-demo-home-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('survives SIGKILLs and a hot migration with one model call per turn, one payment, the same final state, on the port DEMO_PORT names', async () => {
    const port = await freePort();
    const { HEFESTO_TRUST_FILE: _trust, ...env } = process.env;
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...env, HOME: home, DEMO_PORT: String(port) },
    });
    expect(result.stdout, result.stderr).toContain(`Embedded server at http://127.0.0.1:${port}.`);
    expect(result.stdout).toContain('demo passed');
    expect(result.stdout).toMatch(/\| model calls, crash run \| 50 \| yes \|/);
    expect(result.stdout).toMatch(
      /\| payments charged \(crash, migrated, clean\) \| 1, 1, 1 \| yes \|/,
    );
    expect(result.stdout).toMatch(/\| hand-over \| epoch 1 -> 2, late write ErrFenced \| yes \|/);
    expect(result.status).toBe(0);
    expect(existsSync(join(home, '.hefesto')), 'the demo wrote ~/.hefesto').toBe(false);
  }, 150_000);

  it('refuses a DEMO_PORT that is not a port, before starting anything', () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, DEMO_PORT: '87x' },
    });
    expect(result.stderr).toContain('DEMO_PORT must be a port number (1..65535), got "87x"');
    expect(result.status).toBe(2);
  });
});
