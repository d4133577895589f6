import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { InvalidInputError } from '../../domain/errors.js';
import { unwrapSecret, type WrapContext, wrapSecret } from '../../domain/privacy/key-wrap.js';
import { STREAM_SECRET_BYTES } from '../../domain/privacy/stream-keys.js';
import type { KeyWrapper } from '../../ports/key-wrapper.js';

/**
 * The embedded key store: one KEK (32 random bytes) per tenant, in a SQLite file of its own
 * (docs/privacy.md, Decision 3), apart from objects.sqlite (objects and records), so a copy of
 * the data stores holds no key. Its directory is mode 0700 and the file 0600 (SQLite's WAL and
 * shared-memory files, created beside it with the process's umask, are covered by the
 * directory's mode); a file or directory others can read is refused, as ssh refuses a key.
 *
 * A tenant's KEK is created on first use with INSERT OR IGNORE, then read back: two processes
 * (or requests) creating it at once both use the one that landed.
 */
export class LocalKeyStore implements KeyWrapper {
  readonly id = 'local';
  readonly #db: Database.Database;
  readonly #insert: Database.Statement<[string, Buffer, number]>;
  readonly #select: Database.Statement<[string], { kek: Buffer }>;
  readonly #cache = new Map<string, Buffer>();

  constructor(readonly path: string) {
    // Modes are set only on what is created here: an existing directory (it may be the cwd) or
    // file is checked, never changed. The file (SQLite gives its -wal and -shm the file's mode)
    // must be readable by its owner only; a directory others may write to is refused too, since
    // they could swap the file; one others may list is accepted.
    const dir = dirname(path);
    if (!existsSync(dir)) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      chmodSync(dir, 0o700);
    }
    if (!existsSync(path)) {
      closeSync(openSync(path, 'wx', 0o600));
      chmodSync(path, 0o600);
    }
    for (const [p, forbidden, what, advice] of [
      [dir, 0o022, 'directory', 'others can write to it; chmod go-w'],
      [path, 0o077, 'file', 'others can read it; chmod 600'],
    ] as const) {
      const mode = statSync(p).mode & 0o777;
      if ((mode & forbidden) !== 0) {
        throw new InvalidInputError(
          `key store ${what} ${p} has mode ${mode.toString(8)}: ${advice} ${p}, or use another path`,
        );
      }
    }
    this.#db = new Database(path);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = FULL');
    this.#db.pragma('busy_timeout = 5000');
    this.#db.exec(
      'CREATE TABLE IF NOT EXISTS kek (tenant TEXT PRIMARY KEY, kek BLOB NOT NULL, created_at INTEGER NOT NULL)',
    );
    this.#insert = this.#db.prepare(
      'INSERT OR IGNORE INTO kek (tenant, kek, created_at) VALUES (?, ?, ?)',
    );
    this.#select = this.#db.prepare('SELECT kek FROM kek WHERE tenant = ?');
  }

  #kek(tenant: string): Buffer {
    const cached = this.#cache.get(tenant);
    if (cached) return cached;
    this.#insert.run(tenant, randomBytes(32), Date.now());
    const kek = this.#select.get(tenant)?.kek;
    if (kek?.length !== 32) throw new InvalidInputError(`key store has a bad KEK for ${tenant}`);
    this.#cache.set(tenant, kek);
    return kek;
  }

  async generate(ctx: WrapContext): Promise<{ secret: Buffer; wrapped: Buffer }> {
    const secret = randomBytes(STREAM_SECRET_BYTES);
    return { secret, wrapped: wrapSecret(this.#kek(ctx.tenant), ctx, secret, randomBytes(12)) };
  }

  async unwrap(ctx: WrapContext, wrapped: Buffer): Promise<Buffer> {
    return unwrapSecret(this.#kek(ctx.tenant), ctx, wrapped);
  }

  close(): void {
    this.#db.close();
  }
}
