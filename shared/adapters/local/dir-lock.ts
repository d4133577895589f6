import { closeSync, fsyncSync, linkSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { UnavailableError } from '../../domain/errors.js';

/**
 * One process owns a data directory: the lock file holds the owner's pid.
 *
 * 1. Write `LOCK.<pid>` holding our pid and fsync it.
 * 2. Hard-link it to `LOCK`: this fails if `LOCK` exists, so exactly one process wins, and a
 *    `LOCK` is never seen half written.
 * 3. If `LOCK` exists and its pid is not a live process, the owner died without releasing it:
 *    remove it and go back to 2 once. (Two processes taking over the same stale lock at the
 *    same instant is not guarded against; starting two servers on one directory at once is an
 *    operator error this lock reports in every other case.)
 * A crash after 1 leaves a stray `LOCK.<pid>`, removed by the next owner's step 1 or release.
 */

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
};

const holderOf = (path: string): number | undefined => {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
};

/** Takes the lock at `path` for this process; returns the function that releases it. */
export const acquireDirLock = (path: string): (() => void) => {
  const mine = `${path}.${process.pid}`;
  const fd = openSync(mine, 'w');
  try {
    writeSync(fd, `${process.pid}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(mine, path);
        return () => {
          if (holderOf(path) === process.pid) rmSync(path, { force: true });
        };
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw err;
        const holder = holderOf(path);
        if (attempt > 0 || (holder !== undefined && isAlive(holder))) {
          throw new UnavailableError(`data dir in use by process ${holder} (lock file ${path})`);
        }
        rmSync(path, { force: true });
      }
    }
  } finally {
    rmSync(mine, { force: true });
  }
};
