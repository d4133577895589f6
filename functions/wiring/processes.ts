import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import { join, resolve } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { RECORD_WRITES } from '../../shared/adapters/local/local-record-store.js';
import { OBJECT_WRITES, OBJECTS_DB } from '../../shared/adapters/local/objects-db.js';
import { RemoteWriter, WriteServer } from '../../shared/adapters/local/remote-writer.js';
import type { Settings } from '../../shared/config/settings.js';
import { type CompactionTimer, startCompactionTimer } from './compaction.js';
import { createEmbedded, type Embedded } from './embedded.js';
import { LOOPBACK, listenAll, startBanner } from './listen.js';

/**
 * The multi-process embedded server (HEFESTO_WORKERS = N > 1; functions/server.ts runs one
 * process when it is 1). Node cannot share a listening socket between threads, so: N worker
 * processes (node:cluster; the writer hands each connection to one of them in turn) that
 * parse, authenticate, validate, hash, sign and read, and ONE writer process (the cluster's
 * primary, the pid the server prints) that owns the data directory: its lock, its layout,
 * the durable writer's thread. A worker sends every durable write to the writer over IPC
 * (shared/adapters/local/remote-writer.ts), which applies it with the writes of every other
 * worker in one group commit; conditional writes stay atomic because only it applies them.
 *
 * Start (the writer):
 *   1. open the data directory as the one-process server does (lock, layout, signing keys);
 *   2. fork N workers; each opens the directory read-only, binds the port and says so; a
 *      worker that fails before binding (port in use) fails the start: exit 1;
 *   3. once all listen: the first API key (as functions/server.ts), the start line, the
 *      compactor's timer (here, in the writer).
 *
 * Crashes:
 *   - a worker dies (SIGKILL, OOM): its connections are cut; writes it sent are applied or
 *     not, each atomically; the writer forks another. A client's retry with the same
 *     Idempotency-Key is answered exactly once (append.ts's crash windows, as for a server
 *     killed mid-append).
 *   - the writer dies: its IPC channel closes; each worker refuses every write waiting and
 *     every later one (503 ErrUnavailable), stops accepting connections, answers what it has
 *     in flight and exits. The directory's lock died with the writer: a restart recovers as
 *     after a one-process crash.
 *   - a reply lost or late: the worker answers 503 after HEFESTO_WRITER_TIMEOUT_MS.
 *
 * Shutdown (SIGTERM/SIGINT to the writer): it tells every worker to stop (each stops
 * accepting, finishes its requests within the grace period, exits), keeps applying their
 * writes until the last has exited, then stops its compactor and closes the stores.
 */

const SHUTDOWN_GRACE_MS = 10_000;
/** How long a worker whose writer died goes on answering what it had in flight. */
const ORPHAN_GRACE_MS = 2_000;

type Control =
  | { hefesto: 'listening'; port: number; bound: string[] }
  | { hefesto: 'failed'; message: string }
  | { hefesto: 'stop' };

const isControl = (m: unknown): m is Control =>
  typeof m === 'object' &&
  m !== null &&
  ['listening', 'failed', 'stop'].includes(String((m as { hefesto?: unknown }).hefesto));

/**
 * The largest write a worker sends: twice the largest object the settings let one request or
 * the compactor make (a body, a merged segment, a whole state), plus room for its records.
 */
const maxWriteBytes = (settings: Settings) =>
  2 *
    Math.max(
      settings.limits.maxBodyBytes,
      settings.compaction.targetBytes,
      settings.work.budget.maxBytes,
    ) +
  1024 * 1024;

export const startProcesses = (settings: Settings): Promise<void> =>
  cluster.isPrimary ? startWriter(settings) : startWorker(settings);

const startWriter = async (settings: Settings): Promise<void> => {
  const embedded = createEmbedded(settings);
  const path = join(resolve(settings.dataDir), OBJECTS_DB);
  const writes = new WriteServer(
    path,
    { objects: OBJECT_WRITES, records: RECORD_WRITES },
    { durability: settings.durability },
  );
  try {
    await embedded.ready;
  } catch (err) {
    writes.close();
    embedded.close();
    throw err;
  }
  // Structured clone over IPC: a write's bytes cross as bytes (as to the writer's thread).
  cluster.setupPrimary({ serialization: 'advanced' });
  let stopping = false;
  let started = false;
  let compaction: CompactionTimer | undefined;
  let onListening: (m: Control & { hefesto: 'listening' }) => void = () => {};
  let onStartFailed: (message: string) => void = () => {};

  const fork = (): Worker => {
    const worker = cluster.fork();
    // One function per worker: the write server batches each worker's replies by it.
    const reply = (message: object) => {
      if (worker.isConnected()) worker.send(message);
    };
    worker.on('message', (m: unknown) => {
      if (writes.handle(m, reply)) return;
      if (!isControl(m)) return;
      if (m.hefesto === 'listening') onListening(m);
      if (m.hefesto === 'failed') onStartFailed(m.message);
    });
    worker.on('exit', (code, signal) => {
      if (stopping) return;
      if (!started) {
        onStartFailed(`a worker exited while starting (${signal ?? code})`);
        return;
      }
      embedded.logger.warn(
        { pid: worker.process.pid, code, signal },
        'worker died; forking another',
      );
      fork();
    });
    return worker;
  };

  const listening = new Promise<{ port: number; bound: string[] }>((resolveAll, reject) => {
    let count = 0;
    onListening = (m) => {
      if (++count === settings.workers) resolveAll({ port: m.port, bound: m.bound });
    };
    onStartFailed = (message) => reject(new Error(message));
  });
  for (let i = 0; i < settings.workers; i++) fork();

  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    embedded.logger.info({ signal }, 'shutting down');
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
    const exited = workers.map((w) => new Promise<void>((done) => w.once('exit', () => done())));
    for (const worker of workers) if (worker.isConnected()) worker.send({ hefesto: 'stop' });
    await Promise.race([
      Promise.all(exited),
      new Promise((done) => setTimeout(done, SHUTDOWN_GRACE_MS + 2_000).unref()),
    ]);
    for (const worker of workers) worker.process.kill('SIGKILL');
    await Promise.race([
      compaction?.stop(),
      new Promise((done) => setTimeout(done, SHUTDOWN_GRACE_MS).unref()),
    ]);
    writes.close();
    embedded.close();
    await Promise.race([
      embedded.durableWriterStats().catch(() => undefined),
      new Promise((done) => setTimeout(done, SHUTDOWN_GRACE_MS).unref()),
    ]);
    embedded.logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The benchmarks' line (functions/server.ts), with the workers' pids to read their CPU.
  process.on('SIGUSR2', () => {
    void embedded.durableWriterStats().then((stats) => {
      const workers = Object.values(cluster.workers ?? {}).map((w) => w?.process.pid);
      process.stdout.write(`durable-writes ${JSON.stringify({ ...stats, workers })}\n`);
    });
  });

  let port: number;
  let bound: string[];
  try {
    ({ port, bound } = await listening);
  } catch (err) {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    writes.close();
    embedded.close();
    throw err;
  }
  started = true;
  const bootstrap = settings.apiKey ? undefined : await embedded.keys.ensureBootstrapKey();
  process.stdout.write(
    startBanner(settings.host, port, bound, bootstrap, `, ${settings.workers} workers`),
  );
  const { intervalMs } = settings.compaction;
  if (intervalMs > 0 && !stopping) {
    compaction = startCompactionTimer(embedded.compactor, embedded.logger, intervalMs);
  }
};

const startWorker = async (settings: Settings): Promise<void> => {
  const send = (m: object) => process.send?.(m);
  const remote = new RemoteWriter(send, {
    timeoutMs: settings.writerTimeoutMs,
    maxWriteBytes: maxWriteBytes(settings),
  });
  let embedded: Embedded | undefined;
  let servers: Server[] = [];
  let stopping = false;
  const stop = (graceMs: number, code: number) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => {
      for (const server of servers) server.closeAllConnections();
    }, graceMs);
    const sweep = setInterval(() => {
      for (const server of servers) server.closeIdleConnections();
    }, 100);
    const closed = servers.map((s) => new Promise<void>((done) => s.close(() => done())));
    void Promise.all(closed).then(() => {
      clearTimeout(force);
      clearInterval(sweep);
      embedded?.close();
      process.exit(code);
    });
    for (const server of servers) server.closeIdleConnections();
  };
  // The writer is gone (killed, crashed): node:cluster would exit at once, cutting every
  // request in flight; instead refuse the writes (503), answer what is in flight, and exit.
  process.prependOnceListener('disconnect', () => {
    if (cluster.worker) cluster.worker.exitedAfterDisconnect = true;
    remote.lost();
    if (servers.length === 0) process.exit(1);
    stop(ORPHAN_GRACE_MS, 1);
  });
  process.on('message', (m: unknown) => {
    if (remote.receive(m)) return;
    if (isControl(m) && m.hefesto === 'stop') stop(SHUTDOWN_GRACE_MS, 0);
  });
  // Ctrl-C signals the whole process group: a worker leaves it to the writer, whose stop
  // message follows (stopping here first would have the writer fork a replacement). A
  // SIGTERM to a worker alone stops it (and the writer forks another).
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => stop(SHUTDOWN_GRACE_MS, 0));
  try {
    embedded = createEmbedded(settings, {}, { remote });
    await embedded.ready;
    const app = embedded;
    const hosts = settings.host === undefined ? LOOPBACK : [settings.host];
    servers = hosts.map(() => createAdaptorServer({ fetch: app.fetch }) as Server);
    const { port, bound } = await listenAll(servers, settings.port, hosts);
    send({ hefesto: 'listening', port, bound });
  } catch (err) {
    send({ hefesto: 'failed', message: err instanceof Error ? err.message : String(err) });
    embedded?.close();
    process.exit(1);
  }
};
