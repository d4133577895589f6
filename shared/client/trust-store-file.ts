import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseSignedTreeHead, type SignedTreeHead } from '../domain/signed-head.js';
import { type TrustKey, type TrustStore, trustKeyId } from './trust-store.js';

/**
 * The default trust store: one JSON file holding the last verified head per (base URL,
 * tenant, stream):
 *
 *   {"version": 1, "entries": [{"baseUrl", "tenant", "stream", "head": {signed tree head}}]}
 *
 * Writes are atomic (temp file, fsync, rename, fsync of the directory), so a crash leaves the
 * old file or the new one, never half of one. Each `put` re-reads the file and keeps the
 * larger tree per stream, so processes sharing the file do not move each other back (two
 * writing at the same instant may lose one update: the older trusted head then stays, which
 * is weaker but never wrong). A file that does not parse fails closed: starting over from
 * nothing would let a server rewrite what this client verified before.
 */

interface Entry extends TrustKey {
  head: SignedTreeHead;
}

/**
 * `$HEFESTO_TRUST_FILE`, else `~/.hefesto/trusted-heads.json`.
 *
 * @example
 * ```ts
 * const store = new FileTrustStore(defaultTrustStorePath());
 * ```
 */
export const defaultTrustStorePath = (
  env: Record<string, string | undefined> = process.env,
  home: string = homedir(),
): string => env.HEFESTO_TRUST_FILE ?? join(home, '.hefesto', 'trusted-heads.json');

/**
 * The trust file does not hold what this client wrote (damaged, or edited by hand).
 *
 * @example
 * ```ts
 * await store.get(key).catch((err) => {
 *   if (err instanceof TrustStoreError) console.error('restore the trust file from a backup');
 * });
 * ```
 */
export class TrustStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TrustStoreError';
  }
}

const isCode = (err: unknown, code: string) => (err as NodeJS.ErrnoException).code === code;

/**
 * @example
 * ```ts
 * const store = new FileTrustStore(defaultTrustStorePath());
 * await store.put({ baseUrl, tenant: 'acme', stream: 'run-1' }, verifiedHead);
 * ```
 */
export class FileTrustStore implements TrustStore {
  #writes: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  get location(): string {
    return this.path;
  }

  async get(key: TrustKey): Promise<SignedTreeHead | undefined> {
    await this.#writes.catch(() => undefined); // see this process's own last write
    return (await this.#read()).get(trustKeyId(key))?.head;
  }

  put(key: TrustKey, head: SignedTreeHead): Promise<void> {
    const write = async () => {
      const entries = await this.#read();
      const id = trustKeyId(key);
      const stored = entries.get(id);
      if (stored !== undefined && stored.head.treeSize > head.treeSize) return;
      const { baseUrl, tenant, stream } = key;
      entries.set(id, { baseUrl: baseUrl.replace(/\/+$/, ''), tenant, stream, head });
      await this.#write([...entries.values()]);
    };
    const next = this.#writes.then(write, write);
    this.#writes = next.catch(() => undefined);
    return next;
  }

  /**
   * Forgets every head trusted for `baseUrl` (a server whose data was reset on purpose, so
   * that its new streams are trusted on first use again); returns how many. `hefesto trust
   * forget URL` runs this.
   */
  forget(baseUrl: string): Promise<number> {
    const url = baseUrl.replace(/\/+$/, '');
    const write = async () => {
      const entries = await this.#read();
      const kept = [...entries.values()].filter((e) => e.baseUrl.replace(/\/+$/, '') !== url);
      const forgotten = entries.size - kept.length;
      if (forgotten > 0) await this.#write(kept);
      return forgotten;
    };
    const next = this.#writes.then(write, write);
    this.#writes = next.catch(() => undefined);
    return next;
  }

  async #read(): Promise<Map<string, Entry>> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if (isCode(err, 'ENOENT')) return new Map();
      throw err;
    }
    try {
      const doc = JSON.parse(text) as { version?: unknown; entries?: unknown };
      if (doc.version !== 1 || !Array.isArray(doc.entries)) throw new Error('not version 1');
      const out = new Map<string, Entry>();
      for (const e of doc.entries as Entry[]) {
        for (const f of ['baseUrl', 'tenant', 'stream'] as const) {
          if (typeof e[f] !== 'string') throw new Error(`entry without ${f}`);
        }
        const head = parseSignedTreeHead(e.head);
        out.set(trustKeyId(e), { baseUrl: e.baseUrl, tenant: e.tenant, stream: e.stream, head });
      }
      return out;
    } catch (err) {
      throw new TrustStoreError(`trust store ${this.path} is damaged: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async #write(entries: Entry[]): Promise<void> {
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true });
    const temp = `${this.path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
    const body = `${JSON.stringify({ version: 1, entries }, null, 2)}\n`;
    const file = await open(temp, 'wx', 0o600);
    try {
      await file.writeFile(body);
      await file.sync();
    } finally {
      await file.close();
    }
    try {
      await rename(temp, this.path);
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }
}
