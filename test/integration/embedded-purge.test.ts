import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbedded } from '../../functions/wiring/embedded.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { parseSettings } from '../../shared/config/settings.js';

/**
 * Expired records of the embedded store (SQLite has no TTL of its own) leave the disk with
 * each compaction run, not only at the next start: an `npm start` that runs for weeks would
 * otherwise keep every idempotency record (24 h TTL) it ever wrote.
 */

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-purge-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const rowsOf = (pk: string) => {
  const db = new Database(join(dir, 'objects.sqlite'), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM items WHERE pk = ?').get(pk) as { n: number }).n;
  } finally {
    db.close();
  }
};

describe('the embedded compactor', () => {
  it('deletes expired records from the data directory database each run, and keeps the live ones', async () => {
    const embedded = createEmbedded(
      parseSettings({ HEFESTO_DATA_DIR: dir, HEFESTO_COMPACT_INTERVAL_MS: '0' }),
    );
    // Another connection to the same file, as a record written a day ago would have left it.
    const writer = new LocalRecordStore({ path: join(dir, 'objects.sqlite') });
    try {
      const past = Math.floor(Date.now() / 1000) - 60;
      const future = past + 86_400;
      for (const tenant of ['acme', 'globex']) {
        await writer.put({ pk: `t#${tenant}#idem#old`, sk: 'idem', ttl: past });
        await writer.put({ pk: `t#${tenant}#idem#new`, sk: 'idem', ttl: future });
      }
      expect(rowsOf('t#acme#idem#old')).toBe(1);

      await embedded.compactor.run();

      for (const tenant of ['acme', 'globex']) {
        expect(rowsOf(`t#${tenant}#idem#old`)).toBe(0);
        expect(rowsOf(`t#${tenant}#idem#new`)).toBe(1);
      }
    } finally {
      writer.close();
      embedded.close();
    }
  });
});
