import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ensureBuilt, outDir } from '../build.mjs';

/** A free TCP port on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
}

/** The built embedded server (scripts/build.mjs), what `npm start` runs. */
export const SERVER_ENTRY = join(outDir(), 'server.mjs');

/**
 * Starts the embedded server as one Node process running its build, dist/node/server.mjs
 * (rebuilt first if a source is newer: see scripts/build.mjs), and waits until it answers
 * /healthz. On `options.port` if given, else on a free port.
 */
export const startServer = async (
  env: Record<string, string>,
  options: { port?: number } = {},
): Promise<ServerProcess> => {
  await ensureBuilt();
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: { ...process.env, HEFESTO_LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not answer /healthz in time:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, child, output: () => out, exited };
};
