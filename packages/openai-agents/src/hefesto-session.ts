import { HefestoApiError, HefestoClient, type HistoryChange, type Json } from '@hefesto/client';
import {
  type AgentInputItem,
  type SessionHistoryTransactionArgs,
  type SessionHistoryTransactionAwareSession,
  UserError,
} from '@openai/agents-core';
import { type ItemSchema, SessionItems } from './item-schema.js';
import { jsonItems } from './json-items.js';

/**
 * Options of {@link HefestoSession}: a session id and either a {@link HefestoClient} or what
 * to build one from.
 *
 * @example
 * ```ts
 * const options: HefestoSessionOptions = {
 *   sessionId: 'ticket-4711',
 *   baseUrl: 'http://localhost:8787',
 *   apiKey: process.env.HEFESTO_KEY,
 * };
 * ```
 */
export type HefestoSessionOptions = {
  /** The session's id, also its stream's (1..128 of A-Z a-z 0-9 . _ : -). Default: a UUID. */
  sessionId?: string;
  /**
   * Items larger than this (bytes of JSON) go by reference: uploaded as chunks first, then
   * named in the change by their hash. Default 192 KiB (a change's items may take 256 KiB).
   */
  largeItemBytes?: number;
  /**
   * The version of the items' shape and upcasters from older ones (docs/schema-evolution.md,
   * "Sessions"): an older history is upcast on read and migrated once; a newer one refused.
   */
  schema?: ItemSchema;
} & (
  | { client: HefestoClient; baseUrl?: never; apiKey?: never; tenant?: never }
  | { client?: never; baseUrl: string; apiKey: string | undefined; tenant?: string }
);

const STREAM_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const LARGE_ITEM_BYTES = 192 * 1024;
/** How a change names an item uploaded as chunks (shared/history/history-model.ts). */
const ITEM_REF_KEY = '$hefesto.ref';
const ENCODER = new TextEncoder();

/**
 * An OpenAI Agents SDK `Session` whose history lives on Hefesto: each session one stream,
 * each change one request and one conditional append (a hash-chained delta checkpoint), so
 * the history survives the process, a second worker continues it, and every read is checked
 * against the chain by the server. History transactions (`applyHistoryTransaction`) are
 * evaluated by the server: the suffix check and the append in one conditional commit, the
 * operation id kept with the digest of the transaction for as long as the session's stream
 * lives. Requests per call: docs/openai-agents.md.
 *
 * @example
 * ```ts
 * const session = new HefestoSession({ sessionId: 'ticket-4711', baseUrl, apiKey });
 * await session.addItems([{ role: 'user', content: 'hello' }]);
 * console.log(await session.getItems(10));
 * ```
 */
export class HefestoSession implements SessionHistoryTransactionAwareSession {
  readonly #sessionId: string;
  readonly #client: HefestoClient;
  readonly #largeItemBytes: number;
  readonly #items: SessionItems;

  constructor(options: HefestoSessionOptions) {
    this.#sessionId = options.sessionId ?? crypto.randomUUID();
    if (!STREAM_ID.test(this.#sessionId)) {
      throw new UserError(
        'sessionId must be 1..128 characters of A-Z a-z 0-9 . _ : - starting with a letter or digit',
      );
    }
    this.#largeItemBytes = options.largeItemBytes ?? LARGE_ITEM_BYTES;
    this.#client =
      options.client ??
      new HefestoClient({
        baseUrl: options.baseUrl as string,
        apiKey: options.apiKey,
        tenant: options.tenant,
      });
    this.#items = new SessionItems(
      this.#client,
      this.#sessionId,
      options.schema,
      this.#largeItemBytes,
    );
  }

  async getSessionId(): Promise<string> {
    return this.#sessionId;
  }

  /**
   * The last `limit` items (all without one), oldest first: one request (none for 0), whose
   * items are checked against the event the answer says set the state (its hash, and the
   * items' Merkle path to the digest it records). Only a verifying client (`verify: true`)
   * checks that event against the chain: the head's state-setting event, the head proven in
   * the signed tree head; without it, the event is the server's word. Items that do not
   * check out are refused: a `ClientVerificationError`, none returned.
   */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && limit <= 0) return [];
    const page = await this.#client.getHistory(this.#sessionId, { limit, proof: true });
    return (await this.#items.read(page, limit)) as unknown as AgentInputItem[];
  }

  /** One request; an empty list sends none. */
  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.#change({ type: 'append_items', items: await this.#wire(jsonItems(items)) });
  }

  /** Removes and answers the last item (recorded in the ledger): one request. */
  async popItem(): Promise<AgentInputItem | undefined> {
    const { popped } = await this.#change({ type: 'pop' });
    return popped as AgentInputItem | undefined;
  }

  /** Empties the history and forgets its operation ids: one request. */
  async clearSession(): Promise<void> {
    await this.#change({ type: 'clear' });
  }

  /** The whole history replaced by `items` (a compaction), keeping the session: one request. */
  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    await this.#change({ type: 'replace_history', items: await this.#wire(jsonItems(items)) });
  }

  /**
   * The SDK's atomic, idempotent history change: one request, evaluated by the server. The
   * same operation id with the same transaction succeeds without applying it again; with
   * another transaction, or a suffix that no longer matches, it fails (UserError) and
   * nothing changes. Items JSON cannot compare deterministically are refused before sending.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = (args ?? {}) as Partial<SessionHistoryTransactionArgs>;
    if (typeof operationId !== 'string' || !operationId.trim()) {
      throw new UserError('Session history transaction operationId must be a non-empty string.');
    }
    if (!transaction || typeof transaction !== 'object') {
      throw new UserError('Session history transaction must be an object.');
    }
    const change = changeOf(transaction);
    const wired: HistoryChange =
      change.type === 'append_items'
        ? { ...change, items: await this.#wire(change.items) }
        : change.type === 'replace_suffix'
          ? {
              ...change,
              expectedSuffix: await this.#wire(change.expectedSuffix),
              replacement: await this.#wire(change.replacement),
            }
          : change;
    await this.#change(wired, operationId);
  }

  /**
   * Items as a change carries them: inline, or, over `largeItemBytes`, uploaded as chunks
   * (content-addressed: an upload repeated stores nothing twice) and named by reference. The
   * same item always travels the same way, so a retried transaction has the same digest.
   */
  async #wire(items: Json[]): Promise<Json[]> {
    return Promise.all(
      items.map(async (item) => {
        if (ENCODER.encode(JSON.stringify(item)).length <= this.#largeItemBytes) return item;
        const ref = await this.#client.putValue(item);
        return { [ITEM_REF_KEY]: { hash: ref.hash, size: ref.size } };
      }),
    );
  }

  async #change(change: HistoryChange, operationId?: string) {
    try {
      await this.#items.beforeWrite();
      const options = { operationId, ...this.#items.wire };
      const send = () => this.#client.changeHistory(this.#sessionId, change, options);
      const result = await send().catch(async (err) => {
        if (await this.#items.recover(err)) return send();
        throw err;
      });
      this.#items.written();
      return result;
    } catch (err) {
      if (!(err instanceof HefestoApiError)) throw err;
      if (err.code === 'ErrDivergenceDetected') {
        throw new UserError(
          'Session history suffix no longer matches the transaction precondition.',
        );
      }
      if (err.code === 'ErrIdempotencyKeyReused') {
        throw new UserError(
          'Session history operation was already applied with a different transaction.',
        );
      }
      throw err;
    }
  }
}

/** The server's change for one of the SDK's transactions, its items checked and as JSON. */
const changeOf = (transaction: SessionHistoryTransactionArgs['transaction']): HistoryChange => {
  const record = transaction as unknown as Record<string, unknown>;
  const keys = Object.keys(record).sort().join(',');
  if (record.type === 'append_items') {
    if (keys !== 'items,type' || !Array.isArray(record.items)) {
      throw new UserError('Session history append transaction fields are invalid.');
    }
    return { type: 'append_items', items: jsonItems(record.items, true) };
  }
  if (record.type !== 'replace_suffix') {
    throw new UserError('Unsupported session history transaction type.');
  }
  if (
    keys !== 'expectedSuffix,replacement,type' ||
    !Array.isArray(record.expectedSuffix) ||
    !Array.isArray(record.replacement)
  ) {
    throw new UserError('Session history suffix transaction fields are invalid.');
  }
  return {
    type: 'replace_suffix',
    expectedSuffix: jsonItems(record.expectedSuffix, true),
    replacement: jsonItems(record.replacement, true),
  };
};
