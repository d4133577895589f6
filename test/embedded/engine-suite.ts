import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openEmbedded } from '../../packages/embedded/src/index.js';
import type { EmbeddedEngine } from '../../packages/embedded/src/types.js';

/**
 * `serverForSuite` (test/support/server-suite.ts) with the in-process engine instead of a
 * server process: the same signature, a fresh data directory, `apiKey` as the root key
 * (HEFESTO_API_KEY), and `url` the engine's base URL. A suite's clients take the global
 * fetch, so while the block runs the global fetch hands requests to that URL to the engine's
 * handler (no socket), and every other URL to the real fetch.
 */
export const engineForSuite = (prefix: string, apiKey: string): { readonly url: string } => {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}engine-`));
  let engine: EmbeddedEngine | undefined;
  const real = globalThis.fetch;
  beforeAll(async () => {
    engine = await openEmbedded({ dataDir: dir, env: { HEFESTO_API_KEY: apiKey } });
    const origin = engine.baseUrl;
    const inProcess = engine.fetch;
    globalThis.fetch = (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      return url.startsWith(origin) ? inProcess(input, init) : real(input, init);
    };
  });
  afterAll(async () => {
    globalThis.fetch = real;
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get url() {
      if (!engine) throw new Error('the engine is not open: use it inside tests or hooks');
      return engine.baseUrl;
    },
  };
};
