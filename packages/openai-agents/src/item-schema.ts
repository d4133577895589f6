import {
  digestOfState,
  HefestoApiError,
  type HefestoClient,
  type HistoryPage,
  type Json,
  SchemaTooNewError,
  UpcasterMissingError,
} from '@hefesto/client';
import { type AgentInputItem, UserError } from '@openai/agents-core';
import { jsonItems } from './json-items.js';

/**
 * Schema evolution of a session's items (docs/schema-evolution.md, "Sessions"). The history's
 * state records the version of its items' shape (`/schema`, absent: 1). A session of version V
 * reading a history of an older version upcasts its items one version at a time and commits
 * the result once, as one `hefesto.migration` (the changed items and `/schema` set); a history
 * of a newer version is refused (SchemaTooNewError), reads and writes alike. Every change the
 * session sends names V, so the server refuses an older writer even after this session read.
 *
 * How a migration runs, and what a crash after each step leaves:
 *   1. read the state at the head (items, version, digest); dies here: nothing written;
 *   2. upcast every item, the ops that set the changed ones and the version;
 *   3. checkpoint them as a migration on the digest read in 1, under the key
 *      `{session}/schema/{seq}/{V}`: every session that read the same head sends the same body
 *      under the same key (deterministic upcasters), so two at once commit one migration and
 *      the second is answered the first's result. A body that differs, or a head that moved,
 *      is refused: read again from 1 (the winner's migration is then seen).
 */

/**
 * Turns an item of schema version `n` into one of version `n + 1` (key it by `n`). It gets a
 * copy it may change; it must be deterministic (sessions migrating at once then write the same
 * migration) and answer a JSON item.
 *
 * @example
 * ```ts
 * const renameText: ItemUpcaster = (item) => ({ ...item, content: item.text, text: undefined });
 * ```
 */
// biome-ignore lint/suspicious/noExplicitAny: an item of an older version has no type of its own
export type ItemUpcaster = (item: any) => AgentInputItem;

/**
 * The shape of the items a session reads and writes: its version (an integer from 1; a
 * session that declares none is at 1) and the upcasters from each older version it can read.
 *
 * @example
 * ```ts
 * const schema: ItemSchema = { version: 2, upcasters: { 1: (item) => ({ ...item, role: 'user' }) } };
 * ```
 */
export interface ItemSchema {
  version: number;
  upcasters?: Readonly<Record<number, ItemUpcaster>>;
}

/** Migrations attempted before giving up on a history other writers keep moving. */
const MAX_ATTEMPTS = 8;
const LOST = ['ErrDivergenceDetected', 'ErrIdempotencyKeyReused', 'ErrSchemaTooNew'];
const MAX_VERSION = 2 ** 31 - 1;
/** A checkpoint's ops at most (docs/limits): the version's op and the items'. */
const MAX_OPS = 1000;

const isVersion = (v: unknown): v is number =>
  Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= MAX_VERSION;

/** JSON with its object keys sorted: equal values, equal text (to tell changed items). */
const sortedJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** The item-schema side of a HefestoSession: the version check, the upcast, the migration. */
export class SessionItems {
  readonly version: number;
  readonly #upcasters: Readonly<Record<number, ItemUpcaster>>;
  /** The history was seen at this version (read, migrated, or written by this session). */
  #ready: boolean;

  constructor(
    readonly client: HefestoClient,
    readonly sessionId: string,
    schema: ItemSchema | undefined,
    readonly largeItemBytes: number,
  ) {
    this.version = schema?.version ?? 1;
    if (!isVersion(this.version)) {
      throw new UserError(`schema.version must be an integer from 1, not ${schema?.version}`);
    }
    for (const [key, up] of Object.entries(schema?.upcasters ?? {})) {
      if (!isVersion(Number(key)) || Number(key) >= this.version || typeof up !== 'function') {
        throw new UserError(
          `schema.upcasters[${key}] must be a function from a version below ${this.version}`,
        );
      }
    }
    this.#upcasters = schema?.upcasters ?? {};
    // A session that declares no schema writes version 1 and lets the server refuse it.
    this.#ready = this.version === 1;
  }

  /** What a change sends: the version of its items, when above 1. */
  get wire(): { schema?: number } {
    return this.version > 1 ? { schema: this.version } : {};
  }

  /** The last `limit` items of a page in this session's version: upcast and migrated if older. */
  async read(page: HistoryPage, limit?: number): Promise<Json[]> {
    const stored = page.schema ?? 1;
    if (stored > this.version) throw new SchemaTooNewError(stored, this.version);
    // A session never written (seq 0) has nothing to migrate: its first change sets the version.
    if (stored === this.version || page.seq === 0) {
      if (page.seq > 0) this.#ready = true;
      return page.items;
    }
    // The migration reads and writes the state unproven (getState): the items answered are
    // those of a proven read after it, at this session's version.
    let version = stored;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      await this.#migrate();
      const after = await this.client.getHistory(this.sessionId, { limit, proof: true });
      version = after.schema ?? 1;
      if (version > this.version) throw new SchemaTooNewError(version, this.version);
      if (version === this.version) return after.items;
    }
    throw new HefestoApiError(
      'ErrSchemaTooOld',
      0,
      `the history is at schema version ${version} again after ${MAX_ATTEMPTS} migrations to ${this.version}`,
    );
  }

  /** Before a change: the history is at this session's version (one read, once per session). */
  async beforeWrite(): Promise<void> {
    if (this.#ready) return;
    await this.read(await this.client.getHistory(this.sessionId, { limit: 1 }), 1);
  }

  /** After a change landed: the history is at this session's version. */
  written(): void {
    this.#ready = true;
  }

  /**
   * A change refused because the history is at an older version than the session's (another
   * worker of the older version started it since this session last read it): migrate it, and
   * answer true to send the change again.
   */
  async recover(err: unknown): Promise<boolean> {
    if (!(err instanceof HefestoApiError) || err.code !== 'ErrSchemaTooOld') return false;
    if (this.version === 1) return false;
    this.#ready = false;
    await this.beforeWrite();
    return true;
  }

  /** Steps 1-3 of the module comment: the history at this version (its items not proven). */
  async #migrate(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const at = await this.client.getState(this.sessionId);
      const stored = isVersion(at.state.schema) ? at.state.schema : 1;
      if (stored > this.version) throw new SchemaTooNewError(stored, this.version);
      const items = Array.isArray(at.state.items) ? at.state.items : [];
      if (stored === this.version) {
        this.#ready = true;
        return;
      }
      const upcast = items.map((item) => this.#upcast(item, stored));
      const ops = await this.#ops(items, upcast);
      const next = { ...at.state, items: upcast, schema: this.version };
      try {
        await this.client.checkpoint(
          this.sessionId,
          {
            ops,
            baseDigest: at.stateDigest,
            stateDigest: digestOfState(next, at.digestVersion ?? 1),
            migration: { from: stored, to: this.version },
          },
          { idempotencyKey: `${this.sessionId}/schema/${at.seq}/${this.version}` },
        );
      } catch (err) {
        if (err instanceof HefestoApiError && LOST.includes(err.code) && attempt < MAX_ATTEMPTS)
          continue;
        throw err;
      }
      this.#ready = true;
      return;
    }
  }

  #upcast(item: Json, from: number): Json {
    let next: unknown = item;
    for (let v = from; v < this.version; v++) {
      const up = this.#upcasters[v];
      if (!up) throw new UpcasterMissingError(v, from, this.version);
      next = up(structuredClone(next));
    }
    const [json] = jsonItems([next as AgentInputItem]);
    return json ?? null;
  }

  /**
   * The changed items set (by ref past largeItemBytes, as a change sends them), and the
   * version; past a checkpoint's ops, the whole list in one op.
   */
  async #ops(before: Json[], after: Json[]) {
    const changed = after.flatMap((item, i) =>
      sortedJson(item) === sortedJson(before[i]) ? [] : [i],
    );
    const version = { op: 'set' as const, path: '/schema', value: this.version };
    if (changed.length >= MAX_OPS)
      return [{ op: 'set' as const, path: '/items', value: after }, version];
    const ops = [];
    for (const i of changed) {
      const item = after[i] ?? null;
      const path = `/items/${i}`;
      const big = new TextEncoder().encode(JSON.stringify(item)).length > this.largeItemBytes;
      ops.push(
        big
          ? { op: 'set' as const, path, ref: await this.client.putValue(item) }
          : { op: 'set' as const, path, value: item },
      );
    }
    ops.push(version);
    return ops;
  }
}
