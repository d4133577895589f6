import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServer } from '../../scripts/lib/server-process.js';

/** `hefesto compact`: one pass on the embedded data directory, refused while a server owns it. */

const KEY = 'compact-cli-root-key-0123456789';
const cli = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, ['bin/hefesto.mjs', ...args], {
    encoding: 'utf8',
    env: { ...process.env, HEFESTO_LOG_LEVEL: 'silent', ...env },
    timeout: 60_000,
  });

describe('hefesto compact', () => {
  it('runs a pass on a data directory and refuses one a running server owns', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-cli-compact-'));
    try {
      const server = await startServer({ HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: KEY });
      for (let i = 0; i < 30; i++) {
        const res = await fetch(`${server.url}/v1/streams/s/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ events: [{ type: 'observation', payload: { i } }] }),
        });
        expect(res.status).toBe(201);
      }
      const busy = cli(['compact'], { HEFESTO_DATA_DIR: dir });
      expect(busy.status).toBe(1);
      expect(busy.stderr).toMatch(/error: /);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);

      const pass = cli(['compact'], { HEFESTO_DATA_DIR: dir });
      expect(pass.stderr).toBe('');
      expect(pass.status).toBe(0);
      const report = JSON.parse(pass.stdout) as { examined: number; errors: number };
      expect(report.errors).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
