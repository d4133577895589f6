import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import Database from 'better-sqlite3';

/**
 * The objects of an embedded data directory as stored (object layout 3: rows of
 * `objects.sqlite`), for tests that change bytes behind the service's back, as someone with
 * the disk could. The etag column is left as it was: a tamperer need not fix it. `read` answers
 * an object's own bytes (a compressed row inflated, object-codec.ts); `write` stores bytes as
 * they are (a row with `size` = its length), which the store reads back unchanged.
 */
export interface StoredRows {
  /** Keys holding `part`, in order. */
  keys(part: string): string[];
  read(key: string): Buffer;
  write(key: string, body: Uint8Array): void;
  remove(key: string): void;
  close(): void;
}

export const storedRows = (dataDir: string): StoredRows => {
  const db = new Database(join(dataDir, 'objects.sqlite'));
  db.pragma('busy_timeout = 10000');
  const keys = db.prepare<[string], string>(
    'SELECT key FROM objects WHERE instr(key, ?) > 0 ORDER BY key',
  );
  keys.pluck();
  const read = db.prepare<[string], { body: Buffer; size: number }>(
    'SELECT body, size FROM objects WHERE key = ?',
  );
  const write = db.prepare('UPDATE objects SET body = ?, size = ? WHERE key = ?');
  const insert = db.prepare(
    'INSERT OR REPLACE INTO objects (key, etag, size, body) VALUES (?, ?, ?, ?)',
  );
  const remove = db.prepare('DELETE FROM objects WHERE key = ?');
  const etags = new Map<string, string>();
  const etagOf = db.prepare<[string], string>('SELECT etag FROM objects WHERE key = ?');
  etagOf.pluck();
  return {
    keys: (part) => keys.all(part),
    read: (key) => {
      const row = read.get(key);
      if (!row) throw new Error(`no object ${key}`);
      return row.body.length < row.size ? inflateSync(row.body) : row.body;
    },
    write: (key, body) => {
      if (write.run(body, body.length, key).changes === 0) {
        // written back after a remove: as it was, etag included
        insert.run(key, etags.get(key) ?? '', body.length, body);
      }
    },
    remove: (key) => {
      const etag = etagOf.get(key);
      if (etag) etags.set(key, etag);
      remove.run(key);
    },
    close: () => db.close(),
  };
};
