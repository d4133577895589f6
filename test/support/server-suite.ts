import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';

/**
 * The embedded server as a process for the tests of one describe block: started before them
 * on a fresh data directory (`prefix` names it) with `apiKey` as its root key, stopped with
 * SIGTERM after them and its directory removed. Hooks the block registers after this call run
 * after the server is up. `url` is the running server's.
 */
export const serverForSuite = (prefix: string, apiKey: string): { readonly url: string } => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    server = await startServer({ HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: apiKey });
  });
  afterAll(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get url() {
      if (!server) throw new Error('the server is not started: use it inside tests or hooks');
      return server.url;
    },
  };
};
