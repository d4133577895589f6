import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { parseSettings } from '../shared/config/settings.js';
import { type CompactionTimer, startCompactionTimer } from './wiring/compaction.js';
import { createEmbedded } from './wiring/embedded.js';

/**
 * `npm start`: the embedded server (one machine, no AWS).
 *
 * The compactor runs in this process every HEFESTO_COMPACT_INTERVAL_MS (0: never), one pass
 * at a time; a pass cut by shutdown is safe (every step of it is; the next start resumes).
 *
 * Shutdown on SIGTERM/SIGINT:
 *   1. stop accepting connections and close idle keep-alive ones, and stop the compactor's
 *      timer;
 *   2. wait for in-flight requests (and a compaction pass), at most SHUTDOWN_GRACE_MS, then cut
 *      what is left (an append cut here is safe: its retry with the same Idempotency-Key
 *      resumes it);
 *   3. close the stores (SQLite, data directory lock) and exit 0.
 */

const SHUTDOWN_GRACE_MS = 10_000;

const start = async (): Promise<void> => {
  const settings = parseSettings(process.env);
  const embedded = createEmbedded(settings);
  // With a root key configured there is a key already; otherwise make the first one.
  const bootstrap = settings.apiKey
    ? undefined
    : await embedded.keys.ensureBootstrapKey().catch((err: unknown) => {
        embedded.close();
        throw err;
      });

  const server = serve({ fetch: embedded.app.fetch, port: settings.port }, (info) => {
    const lines = [`Hefesto listening on http://localhost:${info.port} (docs: /docs)`];
    if (bootstrap) {
      lines.push(
        `Created the first API key (tenant ${bootstrap.tenant}, scopes ${bootstrap.scopes.join(',')}).`,
        'It is shown only this once; keep it:',
        `  ${bootstrap.key}`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }) as Server;

  const { intervalMs } = settings.compaction;
  const compaction: CompactionTimer | undefined =
    intervalMs > 0
      ? startCompactionTimer(embedded.compactor, embedded.logger, intervalMs)
      : undefined;

  server.on('error', (err) => {
    process.stderr.write(`server error: ${err.message}\n`);
    embedded.close();
    process.exit(1);
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    embedded.logger.info({ signal }, 'shutting down');
    const compactionStopped = Promise.race([
      compaction?.stop(),
      new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref()),
    ]);
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    // A keep-alive connection that finishes its request becomes idle: close it then too.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    server.close(() => {
      clearTimeout(force);
      clearInterval(sweep);
      void compactionStopped.then(() => {
        embedded.close();
        embedded.logger.info('stopped');
        process.exit(0);
      });
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
};

start().catch((err: unknown) => {
  process.stderr.write(`hefesto: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
