// The durable writer's thread (durable-writer.ts starts it; plain JavaScript so that a worker
// needs no TypeScript loader, whichever way the process was started). It owns one SQLite
// connection per database the local adapters write and runs every write of this process.
//
// Group commit: a write arriving while a commit is in progress waits in this thread's message
// queue; when the commit ends, every queued message is taken at once and the writes of each
// database run in ONE transaction (one WAL fsync for all of them), each write in a savepoint of
// its own: a write whose checks fail, or that fails, is undone alone and answered alone. Every
// write is answered only after the transaction holding it is durable.
//
// A write is a compare-and-swap, decided here inside the transaction (so it is atomic against
// this process and any other sharing the file): each `check` reads one value with the
// database's `check` statement and compares it with the value the caller read; if all are
// equal the `writes` run, else the write is answered `stale` and the caller reads again.
//
// Durability: a database opened with durability 'power-loss' syncs the WAL at each commit
// (synchronous=FULL), 'process-crash' never at a commit (NORMAL). A transaction whose writes
// all say `deferSync` commits without a sync in either mode (NORMAL for that commit): the
// caller syncs a later commit of the same file, which makes the WAL durable up to its end.
//
// Messages in:  {t:'open', db, path, statements, durability}  {t:'close', db}  {t:'exit'}
//               {t:'write', id, db, checks, writes, deferSync?}  {t:'stats', id}
// Messages out: [{id, ok:true, changes} | {id, stale:index} | {id, error:{message, code}}]
import { readlinkSync } from 'node:fs';
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** Commits between WAL checkpoints (SQLite's own automatic ones are off, to count syncs). */
const CHECKPOINT_EVERY = 200;

/** This thread's id on Linux (/proc/thread-self -> "<pid>/task/<tid>"), for CPU accounting. */
const tid = (() => {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
})();

/**
 * Free pages (left by deletions) are given back to the file system once they are at least
 * this many bytes and a quarter of the file: compaction deletes merged and superseded objects,
 * and without it the files never shrink. Not sooner: a vacuum moves pages and syncs, and the
 * deletions of one compaction come as many small commits.
 */
const VACUUM_MIN_FREE_BYTES = 256 * 1024;

const dbs = new Map();
const stats = {
  ...{ batches: 0, writes: 0, commits: 0, checkpoints: 0, fsyncs: 0, maxBatch: 0 },
  vacuums: 0,
};

const errorOf = (err) => ({
  message: err instanceof Error ? err.message : String(err),
  code: typeof err?.code === 'string' ? err.code : undefined,
});

const open = ({ db: id, path, statements, busyTimeoutMs, durability }) => {
  const db = new Database(path);
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  db.pragma('journal_mode = WAL');
  const syncs = durability !== 'process-crash';
  db.pragma(`synchronous = ${syncs ? 'FULL' : 'NORMAL'}`);
  db.pragma('wal_autocheckpoint = 0');
  const prepared = {};
  for (const [name, sql] of Object.entries(statements)) prepared[name] = db.prepare(sql);
  prepared.check.pluck();
  dbs.set(id, {
    db,
    statements: prepared,
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT w'),
    release: db.prepare('RELEASE w'),
    undo: db.prepare('ROLLBACK TO w'),
    // Whether commits sync by default, and whether the connection does now (FULL).
    // (Not prepared statements: SQLite applies this pragma when it compiles it.)
    syncs,
    syncing: syncs,
    sinceCheckpoint: 0,
    restarts: false,
    // 2: incremental (set when the database was created; see local-record-store.ts).
    incremental: db.pragma('auto_vacuum', { simple: true }) === 2,
    pageSize: db.pragma('page_size', { simple: true }),
    deleted: false,
  });
};

/**
 * After a commit that deleted rows: when the free pages are worth it, move them to the end
 * of the file and cut it (SQLite's incremental vacuum, a write transaction of its own: a
 * crash in it leaves the database as it was before it). Runs here, on the writer's thread,
 * between two groups of writes, so writes queued meanwhile wait for it like for a commit.
 */
const vacuumIfDue = (entry) => {
  if (!entry.incremental || !entry.deleted) return;
  entry.deleted = false;
  const free = entry.db.pragma('freelist_count', { simple: true });
  const pages = entry.db.pragma('page_count', { simple: true });
  if (free * entry.pageSize < VACUUM_MIN_FREE_BYTES || free * 4 < pages) return;
  entry.db.pragma('incremental_vacuum');
  stats.vacuums++;
  stats.commits++;
  stats.fsyncs += 1;
  checkpointIfDue(entry);
};

/** Statements that delete rows (their changes make free pages). */
const DELETES = new Set(['remove', 'purge']);

/** A checked value is unchanged: the same string, or a BLOB of the same bytes. */
const same = (value, expected) =>
  value === expected ||
  (value instanceof Uint8Array &&
    expected instanceof Uint8Array &&
    Buffer.compare(value, expected) === 0);

/** One write inside the open transaction, in its savepoint. */
const apply = (entry, write) => {
  const { statements } = entry;
  entry.savepoint.run();
  try {
    for (let i = 0; i < write.checks.length; i++) {
      const [params, expected] = write.checks[i];
      if (!same(statements.check.get(...params) ?? null, expected)) {
        entry.release.run();
        return { id: write.id, stale: i };
      }
    }
    let changes = 0;
    for (const [name, params] of write.writes) changes += statements[name].run(...params).changes;
    entry.release.run();
    return { id: write.id, ok: true, changes };
  } catch (err) {
    entry.undo.run();
    entry.release.run();
    return { id: write.id, error: errorOf(err) };
  }
};

/** In SQLite's WAL mode with synchronous=FULL: one sync per commit, two per checkpoint. */
const checkpointIfDue = (entry) => {
  if (++entry.sinceCheckpoint < CHECKPOINT_EVERY) return;
  entry.sinceCheckpoint = 0;
  const [row] = entry.db.pragma('wal_checkpoint(PASSIVE)');
  if (row && row.checkpointed > 0) {
    stats.checkpoints++;
    stats.fsyncs += 2;
    // A WAL fully copied back starts over at the next commit, which then syncs its header too.
    entry.restarts = row.checkpointed === row.log;
  }
};

const commitGroup = (id, writes) => {
  const entry = dbs.get(id);
  if (!entry?.db) {
    const error = entry?.error ?? { message: `durable writer: database ${id} is not open` };
    return writes.map((w) => ({ id: w.id, error }));
  }
  // Synced unless every write of it is deferred (or the database never syncs a commit).
  const sync = entry.syncs && !writes.every((w) => w.deferSync);
  try {
    if (sync !== entry.syncing) {
      entry.db.pragma(`synchronous = ${sync ? 'FULL' : 'NORMAL'}`);
      entry.syncing = sync;
    }
    entry.begin.run();
  } catch (err) {
    const error = errorOf(err);
    return writes.map((w) => ({ id: w.id, error }));
  }
  const results = writes.map((w) => apply(entry, w));
  const deleted = writes.some(
    (w, i) => results[i].ok && results[i].changes > 0 && w.writes.some(([n]) => DELETES.has(n)),
  );
  try {
    entry.commit.run();
  } catch (err) {
    if (entry.db.inTransaction) entry.rollback.run();
    const error = errorOf(err);
    return writes.map((w) => ({ id: w.id, error }));
  }
  stats.commits++;
  if (sync) {
    stats.fsyncs += entry.restarts ? 2 : 1;
    entry.restarts = false;
  }
  stats.writes += writes.length;
  stats.maxBatch = Math.max(stats.maxBatch, writes.length);
  checkpointIfDue(entry);
  if (deleted) entry.deleted = true;
  return results;
};

const run = (batch) => {
  stats.batches++;
  // Opens first (an open always precedes its database's writes), closes last (a close is
  // sent only once its store's writes are answered).
  for (const m of batch) {
    if (m.t !== 'open') continue;
    try {
      open(m);
    } catch (err) {
      dbs.set(m.db, { error: errorOf(err) }); // answered to each of its writes
    }
  }
  const groups = new Map();
  for (const m of batch) {
    if (m.t !== 'write') continue;
    const group = groups.get(m.db);
    if (group) group.push(m);
    else groups.set(m.db, [m]);
  }
  // Each database's answers leave as soon as its transaction is durable.
  for (const [id, writes] of groups) parentPort.postMessage(commitGroup(id, writes));
  // Answered first: a vacuum delays only the writes that arrive while it runs.
  for (const id of groups.keys()) {
    const entry = dbs.get(id);
    if (!entry?.db) continue;
    try {
      vacuumIfDue(entry);
    } catch {
      entry.deleted = true; // busy (another process writing): the next deleting commit retries
    }
  }
  for (const m of batch) {
    if (m.t === 'close') {
      const entry = dbs.get(m.db);
      // The store is closing: nothing waits for a vacuum now, so free pages go back whatever
      // their number (a crash in it leaves the file as it was).
      try {
        if (entry?.incremental && entry.db.pragma('freelist_count', { simple: true }) > 0) {
          entry.db.pragma('incremental_vacuum');
          stats.vacuums++;
        }
      } catch {
        // busy (another process writing): the next close or deleting commit does it
      }
      entry?.db?.close();
      dbs.delete(m.db);
    } else if (m.t === 'stats') {
      parentPort.postMessage([{ id: m.id, ok: true, stats: { ...stats, tids: tid ? [tid] : [] } }]);
    }
  }
  // The last store of this thread's file closed (sent after its close): nothing is left.
  if (batch.some((m) => m.t === 'exit')) {
    for (const entry of dbs.values()) entry.db?.close();
    process.exit(0);
  }
};

parentPort.on('message', (first) => {
  const batch = [first];
  for (let m = receiveMessageOnPort(parentPort); m; m = receiveMessageOnPort(parentPort)) {
    batch.push(m.message);
  }
  run(batch);
});
