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
 *
 * Durability (`Durability`, per database): 'power-loss' (the default) syncs the WAL at every
 * commit (`synchronous=FULL`); 'process-crash' never syncs at a commit (`synchronous=NORMAL`:
 * a committed write is in the WAL, which the kernel keeps when the process dies, but a power
 * cut may take the last commits; SqliteSaver's default). A write sent with `deferSync` is
 * committed without a sync in either mode: its caller makes a later write to the same file
 * whose sync covers it (a WAL is one file, synced up to its end), and answers nobody before.
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
  /** Commit it without a sync: a later write to the same file syncs it (see above). */
  deferSync?: boolean;
}

/** What a commit survives: a power cut (an fsync per commit), or a process crash only. */
export type Durability = 'power-loss' | 'process-crash';

export const DURABILITIES: readonly Durability[] = ['power-loss', 'process-crash'];

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

/** The writer's answer to one message (a write's, or the stats'). */
export type Reply =
  | { id: number; ok: true; changes?: number; stats?: DurableWriterStats }
  | { id: number; stale: number }
  | { id: number; error: { message: string; code?: string } };

interface Waiter {
  resolve(reply: Reply): void;
  reject(err: Error): void;
  /** The write asked for (kept for the test hook, which tells its writes apart). */
  write?: DurableWrite;
  /** Whose write it is (for the test hook: one thread may write both stores' file). */
  lane?: Lane;
}

/**
 * Test hook (child-process crash tests kill the process in it): called when the answers of
 * one transaction arrive from the writer, before any of them is delivered, with the writes
 * it applied. Everything it holds is durable, and nothing of it answered.
 */
export const durableWriterTestHooks: {
  durable?: (lane: Lane, applied: DurableWrite[]) => void;
} = {};

/** The thread a database's writes run on: one per file (stores sharing a file share it). */
type ThreadKey = string;

class WriterThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Waiter>();
  #nextId = 1;
  #dead: Error | undefined;
  /** Databases opened on it and not closed: the last one's close ends the thread. */
  #open = 0;
  /** Resolves when the thread has ended (its connections closed, WALs folded). */
  readonly exited: Promise<void>;

  constructor(onDeath: () => void) {
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
        const first = applied[0] && this.#pending.get(applied[0].id);
        // One message holds the answers of one database's transaction: one store's.
        if (first?.lane) {
          hook(
            first.lane,
            applied.flatMap((r) => this.#pending.get(r.id)?.write ?? []),
          );
        }
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
    this.exited = new Promise((resolve) => {
      this.#worker.on('exit', (code) => {
        die(new UnavailableError(`durable writer stopped (exit code ${code})`));
        resolve();
      });
    });
  }

  retain(): void {
    this.#open++;
  }

  /** After the last database's close: the thread ends once what was sent before is done. */
  release(): boolean {
    if (--this.#open > 0) return false;
    this.send({ t: 'exit' });
    // Held until it has folded its WALs and ended: whoever awaits that (a closing engine)
    // must not see the process end first for want of anything else to wait on.
    if (!this.#dead) this.#worker.ref();
    return true;
  }

  send(message: object): void {
    if (!this.#dead) this.#worker.postMessage(message);
  }

  request(message: object, lane?: Lane): Promise<Reply> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      const write = 'writes' in message ? (message as DurableWrite) : undefined;
      this.#pending.set(id, {
        resolve,
        reject,
        ...(write ? { write } : {}),
        ...(lane && { lane }),
      });
      this.#worker.postMessage({ ...message, id });
    });
  }
}

/**
 * Which store a database holds. Each database file has one writer thread: the objects' and
 * the records' files of a data directory commit on two threads, so that their fsyncs happen
 * at the same time rather than one after the other; a data directory whose records share the
 * objects' file (the embedded wiring) has one thread, and a segment's commit needs no sync of
 * its own (`deferSync`: its head's commit, on the same WAL, syncs both).
 */
export type Lane = 'objects' | 'records';

const threads = new Map<ThreadKey, WriterThread>();
/** Threads told to end, until they have (durableWriterStats waits for them). */
const ending = new Set<WriterThread>();
const writerThread = (key: ThreadKey): WriterThread => {
  let thread = threads.get(key);
  if (!thread) {
    const started: WriterThread = new WriterThread(() => {
      // the next write starts a new one
      if (threads.get(key) === started) threads.delete(key);
    });
    threads.set(key, started);
    thread = started;
  }
  return thread;
};

let nextDb = 1;

/**
 * Where the writes of a database go when another process owns it: the multi-process embedded
 * server's workers send each write to the writer process (remote-writer.ts), whose own
 * DurableDatabase of the same lane applies it. The reply is the writer's, as it came.
 */
export interface RemoteWrites {
  request(lane: Lane, write: DurableWrite): Promise<Reply>;
}

/** One SQLite database written through the durable writer. */
export class DurableDatabase {
  readonly #db = nextDb++;
  readonly #lane: Lane;
  readonly #thread: ThreadKey;
  readonly #open: object;
  #on: WriterThread | undefined;
  readonly #remote: RemoteWrites | undefined;
  #closed = false;

  /**
   * `statements`: the SQL the writer may run on it, by name; `check` returns one value
   * (or no row: null) for a Check's params.
   */
  constructor(
    path: string,
    statements: { check: string } & Record<string, string>,
    options: {
      lane: Lane;
      busyTimeoutMs?: number;
      durability?: Durability;
      /** Another process writes it (see RemoteWrites): no thread here. */
      remote?: RemoteWrites;
    },
  ) {
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const durability = options.durability ?? 'power-loss';
    this.#lane = options.lane;
    this.#thread = path;
    this.#remote = options.remote;
    this.#open = { t: 'open', db: this.#db, path, statements, busyTimeoutMs, durability };
  }

  async write(write: DurableWrite): Promise<WriteOutcome> {
    const reply = await this.request(write);
    if ('error' in reply) throw new DurableWriteError(reply.error.message, reply.error.code);
    if ('stale' in reply) return { ok: false, stale: reply.stale };
    return { ok: true, changes: reply.changes ?? 0 };
  }

  /** The writer's reply to `write`, as it came (remote-writer.ts passes it on). */
  async request(write: DurableWrite): Promise<Reply> {
    if (this.#closed) throw new UnavailableError('the store is closed');
    if (this.#remote) return this.#remote.request(this.#lane, write);
    const on = writerThread(this.#thread);
    if (this.#on !== on) {
      // Opened lazily on first write (a store that only reads starts no thread), and again
      // on a new thread if the last one died.
      on.send(this.#open);
      on.retain();
      this.#on = on;
    }
    return on.request({ t: 'write', db: this.#db, ...write }, this.#lane);
  }

  /** Closes the writer's connection once the writes sent before are done. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const on = this.#on;
    if (!on) return;
    on.send({ t: 'close', db: this.#db });
    if (!on.release()) return;
    // A store opened on this file from now on starts a thread of its own.
    if (threads.get(this.#thread) === on) threads.delete(this.#thread);
    ending.add(on);
    void on.exited.then(() => ending.delete(on));
  }
}

/**
 * Starts the writer's threads of these database files now rather than on the first write (a
 * server's first request).
 */
export const startDurableWriter = (paths: readonly string[]): void => {
  for (const path of paths) writerThread(path);
};

/**
 * The writer's counters since its running threads started, summed (maxBatch: the largest),
 * once the threads told to end (their stores closed) have ended.
 */
export const durableWriterStats = async (): Promise<DurableWriterStats> => {
  await Promise.all([...ending].map((t) => t.exited));
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
