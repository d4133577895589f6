import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataDirInUseError, UnavailableError } from '../../domain/errors.js';

/**
 * One process owns a data directory: it holds an exclusive lock on `LOCK.sqlite` that the
 * kernel drops when the process dies, however it dies (SIGKILL, OOM kill, power cut), so a
 * restart never waits for and never cleans up after the dead owner. (A pid in a file, checked
 * with kill(pid, 0), says "running" for a zombie, for any process that got the pid since, and
 * for ourselves when a container restarts us with the dead owner's pid.)
 *
 * The lock is SQLite's (better-sqlite3 is a dependency already): with `locking_mode =
 * EXCLUSIVE` a connection keeps the locks it takes until it closes, and `BEGIN EXCLUSIVE`
 * takes one no other connection can share, in this process or another. Underneath: fcntl
 * record locks on Unix (which SQLite tracks per connection inside a process), LockFileEx on
 * Windows. Nothing else may open LOCK.sqlite: on Unix, closing any descriptor of a file drops
 * the fcntl locks its process holds on it.
 *
 * `LOCK` (text) was the lock of earlier versions, which kill(pid, 0) its pid. It stays, for
 * them: once holding the lock we write our pid there with LEGACY_NOTE, so that an older server
 * started on this directory refuses it (and a second server's error can name us). A `LOCK`
 * without that note that names another live process may be an older server at work: we
 * refuse rather than migrate its directory under it. That can only be a file an older
 * version left, so it happens at most once, and the message says what to do.
 */

const LEGACY_NOTE = 'the lock is LOCK.sqlite; this pid is for earlier versions';

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

const isBusy = (err: unknown) =>
  err instanceof Database.SqliteError && /^SQLITE_(BUSY|LOCKED)/.test(err.code);

const readLegacy = (path: string): { pid: number; ours: boolean } | undefined => {
  try {
    const text = readFileSync(path, 'utf8');
    const pid = Number.parseInt(text, 10);
    return Number.isInteger(pid) && pid > 0 ? { pid, ours: text.includes(LEGACY_NOTE) } : undefined;
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
};

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
};

/** Takes the lock of data directory `dir` (which must exist); returns the release function. */
export const acquireDirLock = (dir: string): (() => void) => {
  const legacy = join(dir, 'LOCK');
  // timeout 0: a held lock fails at once (SQLITE_BUSY) instead of waiting for it.
  const db = new Database(join(dir, 'LOCK.sqlite'), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY'); // nothing is ever written: no journal file
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (err) {
    db.close();
    if (!isBusy(err)) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new UnavailableError(`cannot lock data dir ${dir} (LOCK.sqlite): ${reason}`, {
        cause: err,
      });
    }
    const holder = readLegacy(legacy);
    const pid = holder?.ours ? holder.pid : undefined;
    throw new DataDirInUseError(dir, {
      ...(pid === undefined ? {} : { pid }),
      message:
        `data dir ${dir} is in use by another Hefesto server${pid ? ` (pid ${pid})` : ''}: ` +
        'stop it, or give this one another HEFESTO_DATA_DIR',
      cause: err,
    });
  }
  try {
    const old = readLegacy(legacy);
    if (old && !old.ours && old.pid !== process.pid && isRunning(old.pid)) {
      throw new UnavailableError(
        `data dir ${dir}: its LOCK file, left by an earlier Hefesto version, names process ` +
          `${old.pid}, which is running. Stop that server first; if process ${old.pid} is not ` +
          `a Hefesto server, delete ${legacy} and start again`,
      );
    }
    writeFileSync(`${legacy}.new`, `${process.pid}\n${LEGACY_NOTE}\n`);
    renameSync(`${legacy}.new`, legacy);
  } catch (err) {
    db.close();
    throw err;
  }
  return () => {
    const current = readLegacy(legacy);
    if (current?.ours && current.pid === process.pid) rmSync(legacy, { force: true });
    db.close();
  };
};
