import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { type Logger, pino } from 'pino';
import {
  type DurableWriterStats,
  durableWriterStats,
  type RemoteWrites,
  startDurableWriter,
} from '../../shared/adapters/local/durable-writer.js';
import { LocalKeyStore } from '../../shared/adapters/local/local-key-store.js';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { LocalWitnessStore } from '../../shared/adapters/local/local-witness-store.js';
import { loadKeyRing } from '../../shared/adapters/local/signing-key-file.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import type { CrashHook } from '../../shared/commit/append.js';
import type { Compactor } from '../../shared/compaction/compactor.js';
import type { Settings } from '../../shared/config/settings.js';
import { createApp } from '../../shared/http/app.js';
import type { AppEnv } from '../../shared/http/context.js';
import { staticDirAssets } from '../../shared/http/static-assets.js';
import { KeyService } from '../../shared/keys/keys.js';
import { checkSigningKeys } from '../../shared/keys/signing-keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { type Clock, systemClock } from '../../shared/ports/clock.js';
import type { MemoryPool } from '../../shared/state/memory-pool.js';
import { compactionLedgerSettings, createCompactor } from './compaction.js';
import { workLedgerSettings } from './work.js';

export interface Embedded {
  app: OpenAPIHono<AppEnv>;
  /** What the HTTP server serves: the app, with appends admitted a few at a time. */
  fetch(request: Request): Promise<Response>;
  keys: KeyService;
  logger: Logger;
  /** Compaction and retention over the same stores (the server's timer, POST /v1/admin/compact). */
  compactor: Compactor;
  /** The process's memory pool (memory-pool.ts), for the benchmarks' counters. */
  memory: MemoryPool | undefined;
  /** The durable writer's counters: commits, fsyncs (durable-writer.ts). */
  durableWriterStats(): Promise<DurableWriterStats>;
  /**
   * Settles once the key ring is checked against the keys recorded as having signed heads
   * (signing-keys.ts); rejects with SigningKeyMissingError when one of them is missing (a
   * deleted or replaced signing-key.pem): the server then refuses to start, and `fetch`
   * answers nothing.
   */
  ready: Promise<void>;
  /** Releases the data directory and closes the database. */
  close(): void;
}

/** Test hooks (child-process tests kill the server at a step of the append protocol). */
export interface EmbeddedHooks {
  crash?: CrashHook;
  /** The clock of every service (default: the system clock); tests move theirs by hand. */
  clock?: Clock;
}

/** Where this process stands in the multi-process server (functions/wiring/processes.ts). */
export interface EmbeddedRole {
  /**
   * A worker: the writer process owns the data directory and applies every write sent here
   * (remote-writer.ts); this process reads it and serves HTTP. Unset: this process owns it.
   */
  remote?: RemoteWrites;
}

/**
 * Wiring of the embedded server: settings -> local stores under HEFESTO_DATA_DIR (objects and
 * records in one file, `objects.sqlite`: local-stores.ts; an append costs one fsync, none with
 * HEFESTO_DURABILITY=process-crash) -> services -> app.
 *
 * Signed tree heads: the key ring of the data directory (`signing-key.pem`, created at first
 * start, mode 0600; `signing-keys-retired.json` after a rotation: signing-key-file.ts),
 * checked against the keys that signed heads before (`ready`).
 *
 * Opening the object store takes the data directory's lock (or fails with UnavailableError
 * naming the server that holds it) and moves an older object layout to the current one; both
 * happen before anything else touches the directory. Every durable write of both stores runs
 * on one thread, the durable writer of their file (durable-writer.ts), started here so that the first
 * request does not wait for it.
 */
/** The console's and the docs' files, as `npm run build:console` leaves them. */
export const STATIC_DIR = fileURLToPath(new URL('../../dist/static', import.meta.url));

export const createEmbedded = (
  settings: Settings,
  hooks: EmbeddedHooks = {},
  role: EmbeddedRole = {},
): Embedded => {
  const clock = hooks.clock ?? systemClock;
  const logger = pino({ level: settings.logLevel });
  const { remote } = role;
  const { objects, records } = openLocalStores(settings.dataDir, {
    clock,
    durability: settings.durability,
    ...(remote && { remote }),
  });
  const { migrated } = objects.layout;
  if (migrated && migrated.objects > 0) {
    logger.info({ ...migrated, to: 3 }, 'moved the data directory to object layout 3');
  }
  let signing: ReturnType<typeof loadKeyRing>;
  try {
    signing = loadKeyRing(settings.dataDir);
  } catch (err) {
    records.close();
    objects.close();
    throw err;
  }
  // Encryption at rest (docs/privacy.md): the key store is a file of its own, apart from
  // objects.sqlite (objects and records).
  const keyStore = settings.keyStore ? new LocalKeyStore(settings.keyStore) : undefined;
  const keyring = keyStore ? new StreamKeyring(records, keyStore) : undefined;
  if (!remote) startDurableWriter([objects.path]);
  const ready = checkSigningKeys(records, signing);
  ready.catch(() => undefined); // awaited by the server and by fetch; not unhandled here
  const ledger = new Ledger(
    { objects, records, clock, ...(keyring && { keyring }) },
    {
      signing,
      ...(hooks.crash ? { crash: hooks.crash } : {}),
      snapshotEvery: settings.snapshotEvery,
      ...compactionLedgerSettings(settings),
      ...workLedgerSettings(settings),
      onSnapshotError: (err) =>
        logger.warn({ err }, 'base snapshot not written; the compactor writes it'),
    },
  );
  // A process that holds the data dir alone (its LOCK) sees every revocation go through this
  // service: key lookups are cached (keys.ts, cacheLookups). A worker of the multi-process
  // server does not (another worker may revoke): it reads the key's record every time.
  const keys = new KeyService({
    records,
    clock,
    rootKey: settings.apiKey,
    cacheLookups: !remote,
  });
  // The witness: a directory beside the objects (write-once files; local-witness-store.ts).
  const witness = new LocalWitnessStore(join(settings.dataDir, 'witness'));
  const compactor = createCompactor(
    {
      objects,
      records,
      clock,
      states: ledger.states,
      checkpoints: ledger.checkpoints,
      logger,
      witness,
      purgeExpired: () => records.purgeExpired(),
    },
    settings,
  );
  const app = createApp({
    ledger,
    keys,
    logger,
    clock,
    limits: settings.limits,
    compactor,
    assets: staticDirAssets(STATIC_DIR),
  });
  const admitted = admitAppends(app, APPEND_CONCURRENCY);
  return {
    app,
    keys,
    logger,
    compactor,
    memory: ledger.states.memory,
    ready,
    fetch: async (request) => {
      await ready;
      return admitted(request);
    },
    durableWriterStats,
    close: () => {
      keyStore?.close();
      records.close();
      objects.close();
    },
  };
};

/**
 * Appends (events and checkpoints) running at once; more wait their turn, first come first
 * served, before their body is read. Each append costs the event loop a few hundred µs in
 * several steps (one per durable write it waits for); with no bound, 64 clients put 64 such
 * steps in every turn of the loop, and a GET (/healthz, a read) waits for all of them. 16 keep
 * the durable writer's batches full (it commits what arrives during a commit).
 */
export const APPEND_CONCURRENCY = 16;

const APPEND_PATH = /^\/v1\/streams\/[^/]+\/(events|checkpoints)$/;

const admitAppends = (app: OpenAPIHono<AppEnv>, limit: number) => {
  let running = 0;
  const waiting: Array<() => void> = [];
  const done = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async (request: Request): Promise<Response> => {
    if (request.method !== 'POST' || !APPEND_PATH.test(new URL(request.url).pathname)) {
      return app.fetch(request);
    }
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await app.fetch(request);
    } finally {
      done();
    }
  };
};
