import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';

/**
 * Object layout 3: every object of a data directory is a row of `objects.sqlite`. One file per
 * object (layout 2) needed three fsyncs per object (its bytes, its directory entry, then the
 * records' WAL), none of which two appends could share; rows of many appends share one WAL
 * fsync (durable-writer.ts). The etag (SHA-256 of the bytes, as in layouts 1 and 2) is stored
 * with them, so reads, lists and conditional puts do not hash the bytes again.
 *
 * A rowid table with the key as its unique index, not WITHOUT ROWID: rows hold bodies of any
 * size, which SQLite keeps best in a rowid table.
 */

export const OBJECTS_DB = 'objects.sqlite';

export const OBJECTS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS objects (
    key TEXT NOT NULL PRIMARY KEY,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    body BLOB NOT NULL
  )`;

/** What the durable writer runs on it (see DurableDatabase). */
export const OBJECT_WRITES = {
  check: 'SELECT etag FROM objects WHERE key = ?',
  upsert: 'INSERT OR REPLACE INTO objects (key, etag, size, body) VALUES (?, ?, ?, ?)',
  remove: 'DELETE FROM objects WHERE key = ?',
};

export const etagOf = (body: Uint8Array): string => createHash('sha256').update(body).digest('hex');

/**
 * Opens (creating if need be) the objects database for reading and the writer's setup;
 * `readonly`: a reader of a database another process owns and set up (remote-writer.ts).
 */
export const openObjectsDb = (
  path: string,
  options: { busyTimeoutMs?: number; readonly?: boolean } = {},
): Database.Database => {
  const db = new Database(path, {
    readonly: options.readonly === true,
    fileMustExist: options.readonly === true,
  });
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    if (options.readonly) return db;
    // A new database only (see local-record-store.ts): pages freed by deletions go back to
    // the file system (durable-writer-thread.mjs runs the incremental vacuum).
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(OBJECTS_SCHEMA);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
};
