import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Clock } from '../../ports/clock.js';
import { fsyncDir } from './durable-fs.js';
import type { Durability, RemoteWrites } from './durable-writer.js';
import { LocalObjectStore } from './local-object-store.js';
import { LocalRecordStore, RECORDS_SCHEMA } from './local-record-store.js';

/** Where a data directory kept its records before they moved into `objects.sqlite`. */
export const LEGACY_RECORDS_DB = 'records.sqlite';

export interface LocalStores {
  objects: LocalObjectStore;
  records: LocalRecordStore;
}

/**
 * `remote`: the stores of a worker of the multi-process server, reading the directory another
 * process owns and sending it every write (remote-writer.ts).
 *
 * The stores of a data directory, in ONE database file (`objects.sqlite`: table `objects` and
 * table `items`), so that an append costs one fsync: its segment is committed without a sync
 * (`syncWithCommit`), then its head's transaction syncs the one WAL, which holds both (a WAL
 * is synced up to its end; the segment's frames come first). Two files would need two syncs,
 * in order, or a head could outlive its segment after a power cut.
 *
 * A data directory that has a `records.sqlite` (made before) has its records moved in on open,
 * under the directory's lock (taken by the object store), before any write:
 *   1. one transaction of `objects.sqlite`: create table `items` and copy every item of
 *      `records.sqlite` (its WAL included) into it. The table's existence is the commit
 *      point: from then on `items` is the authority. Dies before the commit: rolled back,
 *      `records.sqlite` untouched; the next open does 1 again.
 *   2. remove `records.sqlite`, then its `-wal` and `-shm`, and fsync the directory. Dies
 *      here: the next open finds `items` in `objects.sqlite` and only finishes 2.
 */
export const openLocalStores = (
  dir: string,
  options: { clock?: Clock; durability?: Durability; remote?: RemoteWrites } = {},
): LocalStores => {
  const { durability, remote } = options;
  const objects = new LocalObjectStore({
    dir,
    sharesFileWithRecords: true,
    ...(durability && { durability }),
    ...(remote && { remote }),
  });
  try {
    // A remote's reader (remote-writer.ts): the owner moved the records in when it opened.
    if (!remote) mergeLegacyRecords(dir, objects.path);
    const records = new LocalRecordStore({
      path: objects.path,
      ...(options.clock && { clock: options.clock }),
      ...(durability && { durability }),
      ...(remote && { remote }),
    });
    return { objects, records };
  } catch (err) {
    objects.close();
    throw err;
  }
};

/** Test hook (child-process tests kill the process at each step of the move). */
export const mergeTestHooks: { step?: (step: 'copied' | 'committed') => void } = {};

/** Steps 1 and 2 above; a no-op without a `records.sqlite`. Returns the items moved. */
export const mergeLegacyRecords = (dir: string, objectsPath: string): number | undefined => {
  const legacy = join(dir, LEGACY_RECORDS_DB);
  if (!existsSync(legacy)) {
    for (const suffix of ['-wal', '-shm']) rmSync(`${legacy}${suffix}`, { force: true });
    return undefined;
  }
  const db = new Database(objectsPath);
  let moved: number | undefined;
  try {
    db.pragma('busy_timeout = 5000');
    db.pragma('synchronous = FULL');
    const merged = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'items'")
      .get();
    if (!merged) {
      db.prepare('ATTACH DATABASE ? AS legacy').run(legacy);
      moved = db.transaction(() => {
        db.exec(RECORDS_SCHEMA);
        const { changes } = db
          .prepare('INSERT INTO items SELECT pk, sk, ttl, body FROM legacy.items')
          .run();
        mergeTestHooks.step?.('copied');
        return changes;
      })();
      db.exec('DETACH DATABASE legacy');
      mergeTestHooks.step?.('committed');
    }
  } finally {
    db.close();
  }
  rmSync(legacy);
  for (const suffix of ['-wal', '-shm']) rmSync(`${legacy}${suffix}`, { force: true });
  fsyncDir(dir);
  return moved;
};
