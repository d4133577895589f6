import type { Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createAdaptorServer } from '@hono/node-server';
import { parseSettings } from '../shared/config/settings.js';
import type { IssuedKey } from '../shared/keys/keys.js';
import { type CompactionTimer, startCompactionTimer } from './wiring/compaction.js';
import { createEmbedded } from './wiring/embedded.js';
import { LOOPBACK, listenAll, startBanner } from './wiring/listen.js';
import { startProcesses } from './wiring/processes.js';

/**
 * `npm start`: the embedded server (one machine, no AWS). One Node process, signals included:
 * (HEFESTO_WORKERS > 1: a writer process and N workers instead, functions/wiring/processes.ts)
 * built into dist/node/server.mjs (scripts/build.mjs), run as `node dist/node/server.mjs`
 * (what `npm start` execs under npm).
 *
 * Start:
 *   1. open the data directory (its lock, then a layout migration if one is due) and stores,
 *      and check the signing key against the keys that signed heads before (a lost or
 *      replaced key: exit 1 with the way out, signing-keys.ts);
 *   2. bind the port; if that fails (in use, no permission), close the stores and exit 1;
 *   3. only now, serving, create the first API key (unless HEFESTO_API_KEY is set or one was
 *      made before) and print it. A busy port therefore never creates a key nobody saw; a
 *      crash between the key's write and its print is the one window left (microseconds),
 *      and a root key (HEFESTO_API_KEY) recovers from it.
 *
 * The compactor runs in this process every HEFESTO_COMPACT_INTERVAL_MS (0: never), one pass
 * at a time; a pass cut by shutdown is safe (every step of it is; the next start resumes).
 *
 * Shutdown on SIGTERM/SIGINT (one that comes while starting waits until it has started):
 *   1. stop accepting connections and close idle keep-alive ones, and stop the compactor's
 *      timer;
 *   2. wait for in-flight requests (and a compaction pass), at most SHUTDOWN_GRACE_MS, then cut
 *      what is left (an append cut here is safe: its retry with the same Idempotency-Key
 *      resumes it);
 *   3. close the stores (SQLite, data directory lock), wait until the durable writer's threads
 *      have closed their connections too (so the WAL is folded into the database files), and
 *      exit 0.
 */

const SHUTDOWN_GRACE_MS = 10_000;

const start = async (): Promise<void> => {
  const settings = parseSettings(process.env);
  if (settings.workers > 1) return startProcesses(settings);
  const embedded = createEmbedded(settings);
  // One server per address (127.0.0.1 and ::1 by default: a socket binds one address).
  const hosts = settings.host === undefined ? LOOPBACK : [settings.host];
  const servers = hosts.map(() => createAdaptorServer({ fetch: embedded.fetch }) as Server);
  // From here on a signal stops the server: one that comes while it starts (binding, writing
  // the first key) takes effect once it has started.
  let compaction: CompactionTimer | undefined;
  let started: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    started = resolve;
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    await ready;
    embedded.logger.info({ signal }, 'shutting down');
    const compactionStopped = Promise.race([
      compaction?.stop(),
      new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref()),
    ]);
    const force = setTimeout(() => {
      for (const server of servers) server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    // A keep-alive connection that finishes its request becomes idle: close it then too.
    const sweep = setInterval(() => {
      for (const server of servers) server.closeIdleConnections();
    }, 100);
    const closed = servers.map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    void Promise.all(closed).then(() => {
      clearTimeout(force);
      clearInterval(sweep);
      void compactionStopped.then(async () => {
        embedded.close();
        // The writer's threads close their connections in order after every write sent
        // before; a request answered after them says they are done (the last connection
        // to close folds the WAL into the database file), bounded by the grace period.
        await Promise.race([
          embedded.durableWriterStats().catch(() => undefined),
          new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref()),
        ]);
        embedded.logger.info('stopped');
        process.exit(0);
      });
    });
    for (const server of servers) server.closeIdleConnections();
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // For the benchmarks, one line on stdout: the durable writer's counters (fsyncs, commits),
  // how late the event loop ran since the last such line (ms), and the memory pool's counters.
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  process.on('SIGUSR2', () => {
    const ms = (q: number) => Number((loopDelay.percentile(q) / 1e6).toFixed(2));
    const loop = { p50: ms(50), p99: ms(99), max: Number((loopDelay.max / 1e6).toFixed(2)) };
    loopDelay.reset();
    void embedded.durableWriterStats().then((stats) => {
      const memory = embedded.memory?.stats;
      embedded.memory?.resetPeak();
      process.stdout.write(`durable-writes ${JSON.stringify({ ...stats, loop, memory })}\n`);
    });
  });

  let port: number;
  let bound: string[];
  let bootstrap: IssuedKey | undefined;
  try {
    await embedded.ready; // a lost or replaced signing key refuses the start (signing-keys.ts)
    ({ port, bound } = await listenAll(servers, settings.port, hosts));
    // With a root key configured there is a key already; otherwise make the first one.
    bootstrap = settings.apiKey ? undefined : await embedded.keys.ensureBootstrapKey();
  } catch (err) {
    for (const server of servers) server.close();
    embedded.close();
    throw err;
  }
  process.stdout.write(startBanner(settings.host, port, bound, bootstrap));

  const { intervalMs } = settings.compaction;
  compaction =
    intervalMs > 0
      ? startCompactionTimer(embedded.compactor, embedded.logger, intervalMs)
      : undefined;

  for (const server of servers) {
    server.on('error', (err) => {
      process.stderr.write(`server error: ${err.message}\n`);
      embedded.close();
      process.exit(1);
    });
  }
  started();
};

start().catch((err: unknown) => {
  process.stderr.write(`hefesto: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
