import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { keysWithPrefix, keyToPath } from './object-paths.js';
import { etagOf, OBJECTS_SCHEMA } from './objects-db.js';

/**
 * The step from object layout 2 (a file per object, object-paths.ts) to layout 3 (rows of
 * `objects.sqlite`, objects-db.ts): copies every layout-2 object of `objectsDir` into a new
 * database at `dbPath`, in one transaction, and closes it. Files are read one at a time.
 *
 * The database is built with a rollback journal (not WAL) so that, once closed, it is one
 * self-contained file: the caller can rename it into place. Whatever an earlier, cut-short
 * build left at `dbPath` (with its journal) is removed first.
 *
 * `onCopied` is called after each row (tests kill the process there: a crash inside the
 * transaction leaves a database SQLite rolls back, which the next build removes anyway).
 */
export const copyFilesToDb = (
  objectsDir: string,
  dbPath: string,
  onCopied: () => void = () => {},
): number => {
  for (const suffix of ['', '-journal', '-wal', '-shm'])
    rmSync(`${dbPath}${suffix}`, { force: true });
  const db = new Database(dbPath);
  try {
    db.pragma('journal_mode = DELETE');
    db.pragma('synchronous = FULL');
    // Before the table: a new database only (durable-writer-thread.mjs vacuums it).
    db.pragma('auto_vacuum = INCREMENTAL');
    db.exec(OBJECTS_SCHEMA);
    const insert = db.prepare('INSERT INTO objects (key, etag, size, body) VALUES (?, ?, ?, ?)');
    // Sorted: the key index is then built in order.
    const keys = keysWithPrefix(objectsDir, '').sort();
    db.transaction(() => {
      for (const key of keys) {
        const body = readFileSync(join(objectsDir, ...keyToPath(key)));
        insert.run(key, etagOf(body), body.length, body);
        onCopied();
      }
    })();
    return keys.length;
  } finally {
    db.close();
  }
};
