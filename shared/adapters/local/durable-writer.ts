import { Worker } from 'node:worker_threads';
import { UnavailableError } from '../../domain/errors.js';

/**
 * Every durable write of the local adapters goes through one thread of this process (the
 * "durable writer", durable-writer-thread.mjs), so the event loop never waits for an fsync:
 * reads, /healthz and request parsing go on while a commit is being made durable. Writes that
 * arrive during a commit are committed together in the next one (group commit), per database
 * in one SQLite transaction: many appends share one WAL fsync, each answered once its own
 * transaction is durable.
 *
 * A write is a compare-and-swap decided on the writer's thread inside the transaction: the
 * caller reads the current values on its own connection (WAL readers never wait for the
 * writer), decides what to write, and sends the values it read as `checks`. If any changed
 * meanwhile the write is answered `stale` and nothing is written; the caller reads again.
 * One thread makes these atomic within the process; SQLite's write lock (BEGIN IMMEDIATE)
 * makes them atomic against other processes sharing the file.
 */

export type SqlValue = string | number | bigint | Uint8Array | null;

/**
 * Values for the database's `check` statement, and the single value it must still return
 * (a BLOB compares by its bytes).
 */
export type Check = [params: SqlValue[], expected: string | Uint8Array | null];
/** A named statement of the database and its parameters. */
export type Write = [statement: string, params: SqlValue[]];

export interface DurableWrite {
  checks: Check[];
  writes: Write[];
}

export type WriteOutcome = { ok: true; changes: number } | { ok: false; stale: number };

export interface DurableWriterStats {
  /** Rounds of the writer's loop (each takes every message queued meanwhile). */
  batches: number;
  writes: number;
  /** SQLite transactions committed (each holds the writes of one database in a batch). */
  commits: number;
  checkpoints: number;
  /** File syncs SQLite issued for them: one per commit, two per checkpoint. */
  fsyncs: number;
  maxBatch: number;
  /** Incremental vacuums run after deleting commits (each also counts as a commit). */
  vacuums: number;
  /** The writer threads' Linux thread ids (where /proc tells), to read their CPU time. */
  tids: number[];
}

/** A write SQLite refused (its code is SQLite's, e.g. SQLITE_BUSY, SQLITE_FULL). */
export class DurableWriteError extends Error {
  readonly code: string | undefined;

  constructor(message: string, code: string | undefined) {
    super(message);
    this.name = 'DurableWriteError';
    this.code = code;
  }
}

type Reply =
  | { id: number; ok: true; changes?: number; stats?: DurableWriterStats }
  | { id: number; stale: number }
  | { id: number; error: { message: string; code?: string } };

interface Waiter {
  resolve(reply: Reply): void;
  reject(err: Error): void;
  /** The write asked for (kept for the test hook, which tells its writes apart). */
  write?: DurableWrite;
}

/**
 * Test hook (child-process crash tests kill the process in it): called when the answers of
 * one transaction arrive from the writer, before any of them is delivered, with the writes
 * it applied. Everything it holds is durable, and nothing of it answered.
 */
export const durableWriterTestHooks: {
  durable?: (lane: Lane, applied: DurableWrite[]) => void;
} = {};

class WriterThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Waiter>();
  #nextId = 1;
  #dead: Error | undefined;

  constructor(lane: Lane, onDeath: () => void) {
    // No loader flags (tsx): the thread is plain JavaScript. Profiling flags carry over.
    const execArgv = process.execArgv.filter((a) => a.startsWith('--cpu-prof'));
    this.#worker = new Worker(new URL('./durable-writer-thread.mjs', import.meta.url), {
      execArgv,
    });
    this.#worker.unref();
    this.#worker.on('message', (replies: Reply[]) => {
      const hook = durableWriterTestHooks.durable;
      if (hook) {
        const applied = replies.filter((r) => 'ok' in r && !('stats' in r));
        hook(
          lane,
          applied.flatMap((r) => this.#pending.get(r.id)?.write ?? []),
        );
      }
      for (const reply of replies) {
        const waiter = this.#pending.get(reply.id);
        if (!waiter) continue;
        this.#pending.delete(reply.id);
        waiter.resolve(reply);
      }
      if (this.#pending.size === 0) this.#worker.unref();
    });
    const die = (err: Error) => {
      if (this.#dead) return;
      this.#dead = err;
      onDeath();
      for (const waiter of this.#pending.values()) waiter.reject(err);
      this.#pending.clear();
    };
    this.#worker.on('error', (err) =>
      die(new UnavailableError(`durable writer failed: ${err.message}`, { cause: err })),
    );
    this.#worker.on('exit', (code) =>
      die(new UnavailableError(`durable writer stopped (exit code ${code})`)),
    );
  }

  send(message: object): void {
    if (!this.#dead) this.#worker.postMessage(message);
  }

  request(message: object): Promise<Reply> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      const write = 'writes' in message ? (message as DurableWrite) : undefined;
      this.#pending.set(id, { resolve, reject, ...(write ? { write } : {}) });
      this.#worker.postMessage({ ...message, id });
    });
  }
}

/**
 * One writer thread per lane: the objects' and the records' databases commit on two threads,
 * so that an append's segment commit and another append's head commit make their fsyncs at
 * the same time rather than one after the other. Each database is written by one thread only.
 */
export type Lane = 'objects' | 'records';

const threads = new Map<Lane, WriterThread>();
const writerThread = (lane: Lane): WriterThread => {
  let thread = threads.get(lane);
  if (!thread) {
    const started: WriterThread = new WriterThread(lane, () => {
      // the next write starts a new one
      if (threads.get(lane) === started) threads.delete(lane);
    });
    threads.set(lane, started);
    thread = started;
  }
  return thread;
};

let nextDb = 1;

/** One SQLite database written through the durable writer. */
export class DurableDatabase {
  readonly #db = nextDb++;
  readonly #lane: Lane;
  readonly #open: object;
  #on: WriterThread | undefined;
  #closed = false;

  /**
   * `statements`: the SQL the writer may run on it, by name; `check` returns one value
   * (or no row: null) for a Check's params.
   */
  constructor(
    path: string,
    statements: { check: string } & Record<string, string>,
    options: { lane: Lane; busyTimeoutMs?: number },
  ) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.#lane = options.lane;
    this.#open = { t: 'open', db: this.#db, path, statements, busyTimeoutMs };
  }

  async write(write: DurableWrite): Promise<WriteOutcome> {
    if (this.#closed) throw new UnavailableError('the store is closed');
    const on = writerThread(this.#lane);
    if (this.#on !== on) {
      // Opened lazily on first write (a store that only reads starts no thread), and again
      // on a new thread if the last one died.
      on.send(this.#open);
      this.#on = on;
    }
    const reply = await on.request({ t: 'write', db: this.#db, ...write });
    if ('error' in reply) throw new DurableWriteError(reply.error.message, reply.error.code);
    if ('stale' in reply) return { ok: false, stale: reply.stale };
    return { ok: true, changes: reply.changes ?? 0 };
  }

  /** Closes the writer's connection once the writes sent before are done. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#on?.send({ t: 'close', db: this.#db });
  }
}

/** Starts the writer's threads now rather than on the first write (a server's first request). */
export const startDurableWriter = (): void => {
  writerThread('objects');
  writerThread('records');
};

/** The writer's counters since its threads started, summed (maxBatch: the largest). */
export const durableWriterStats = async (): Promise<DurableWriterStats> => {
  const total: DurableWriterStats = {
    ...{ batches: 0, writes: 0, commits: 0, checkpoints: 0, fsyncs: 0, maxBatch: 0 },
    vacuums: 0,
    tids: [],
  };
  for (const thread of threads.values()) {
    const reply = await thread.request({ t: 'stats' });
    if (!('ok' in reply) || !reply.stats) throw new UnavailableError('durable writer: no stats');
    const stats = reply.stats;
    total.batches += stats.batches;
    total.writes += stats.writes;
    total.commits += stats.commits;
    total.checkpoints += stats.checkpoints;
    total.fsyncs += stats.fsyncs;
    total.vacuums += stats.vacuums ?? 0;
    total.maxBatch = Math.max(total.maxBatch, stats.maxBatch);
    total.tids.push(...stats.tids);
  }
  return total;
};
