import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { serve } from '@hono/node-server';
import { runCli } from '../../cli/main.js';
import { createEmbedded, type Embedded } from '../../functions/wiring/embedded.js';
import { parseSettings } from '../../shared/config/settings.js';

/**
 * The CLI run in this process (`runCli`, with captured stdout and stderr) against the
 * embedded server's wiring served on an ephemeral port in this process: the same app, stores
 * and compactor as `npm start`, without a process per command.
 */

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

const sink = () => {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, text: () => text };
};

/**
 * This process's environment without its HEFESTO_* settings, except the test run's trust
 * file (test/support/isolated-trust-file.ts), so a CLI run never writes ~/.hefesto.
 */
export const hostEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('HEFESTO_') || k === 'HEFESTO_TRUST_FILE',
    ),
  );

/** The environment of a run: nothing HEFESTO_* from outside (but the trust file), then `env`. */
export const cliEnv = (env: Record<string, string>): NodeJS.ProcessEnv => ({
  ...hostEnv(),
  HEFESTO_LOG_LEVEL: 'silent',
  ...env,
});

export const runCliHere = async (args: string[], env: Record<string, string>): Promise<CliRun> => {
  const out = sink();
  const err = sink();
  const code = await runCli(args, cliEnv(env), { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
};

export interface EmbeddedServer {
  url: string;
  dataDir: string;
  embedded: Embedded;
  close(): Promise<void>;
}

/** The embedded server on 127.0.0.1:0 over a fresh data directory (no timer compaction). */
export const startEmbedded = async (env: Record<string, string> = {}): Promise<EmbeddedServer> => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-cli-here-'));
  const dataDir = join(dir, 'data');
  const embedded = createEmbedded(
    parseSettings({
      HEFESTO_DATA_DIR: dataDir,
      HEFESTO_LOG_LEVEL: 'silent',
      HEFESTO_COMPACT_INTERVAL_MS: '0',
      ...env,
    }),
  );
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: embedded.app.fetch, port: 0, hostname: '127.0.0.1' }, () =>
      resolve(s as Server),
    ) as Server;
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    embedded,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      embedded.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
