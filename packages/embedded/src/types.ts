import type { HefestoClient, HefestoClientOptions, Scope } from '@hefesto/client';

/**
 * Options of {@link openEmbedded}.
 *
 * @example
 * ```ts
 * const options: EmbeddedOptions = {
 *   dataDir: '.hefesto',
 *   principal: { tenant: 'default', scopes: ['read', 'write'] },
 * };
 * ```
 */
export interface EmbeddedOptions {
  /** The data directory, the one `npm start` uses. Default `HEFESTO_DATA_DIR`, else `./.hefesto`. */
  dataDir?: string;
  /**
   * Who the engine's client is: a tenant and scopes (default tenant `default`, every scope).
   * Never the operator: keys for other tenants need the operator key (`serve` returns it).
   */
  principal?: { tenant?: string; scopes?: Scope[] };
  /**
   * Also serve the data directory over HTTP (loopback unless `host` says otherwise), so the
   * CLI and the console reach it while this process holds it. Port 0 picks a free one.
   */
  serve?: { port: number; host?: string };
  /**
   * The server settings (`HEFESTO_*`, as `npm start` reads them: compaction interval,
   * snapshot spacing, limits, `HEFESTO_API_KEY`). Default `process.env`; `dataDir` wins over
   * its `HEFESTO_DATA_DIR`, and `PORT` is not read (see `serve`).
   */
  env?: Record<string, string | undefined>;
  /**
   * What a write survives once it is answered (docs/operations.md, "Durability"):
   * `'power-loss'` (the default: one fsync per commit; an append, a LangGraph put, costs one)
   * or `'process-crash'` (no fsync at a commit: a crash of this process loses nothing
   * answered, a power cut or an OS crash may lose the last writes; SqliteSaver's default).
   * Default `HEFESTO_DURABILITY`, else `'power-loss'`.
   *
   * @example
   * ```ts
   * const engine = await openEmbedded({ dataDir: '.hefesto', durability: 'process-crash' });
   * ```
   */
  durability?: 'power-loss' | 'process-crash';
  /** Pino level of the engine's log (stdout). Default `HEFESTO_LOG_LEVEL`, else `warn`. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * Options of the engine's client (`verify`, `trustStore`, `retry`, ...); its `baseUrl`,
   * `apiKey`, `tenant` and `fetch` are the engine's.
   */
  client?: Omit<HefestoClientOptions, 'baseUrl' | 'apiKey' | 'tenant' | 'fetch'>;
}

/**
 * The loopback listener of `serve`.
 *
 * @example
 * ```ts
 * const { served } = await openEmbedded({ serve: { port: 0 } });
 * console.log(served?.url);
 * ```
 */
export interface ServedEngine {
  /** Where the same app answers over HTTP, e.g. `http://localhost:8787`. */
  url: string;
  /**
   * The operator key, created when this data directory never had one (as `npm start` prints
   * it on its first start); shown only this once. Undefined afterwards.
   */
  firstKey?: { id: string; key: string; tenant: string; scopes: Scope[] };
}

/**
 * An open engine: a client served in this process, and how to close it.
 *
 * @example
 * ```ts
 * const { client, close } = await openEmbedded({ dataDir: '.hefesto' });
 * await client.append('run-1', [{ type: 'note', payload: 'hi' }]);
 * await close();
 * ```
 */
export interface EmbeddedEngine {
  /** A HefestoClient whose every request the engine's app answers in this process. */
  client: HefestoClient;
  /**
   * The handler the client calls (fetch-shaped): for another client of the same principal,
   * e.g. `new HefestoClient({ baseUrl, apiKey, fetch })` with this engine's `baseUrl` and `apiKey`.
   */
  fetch: typeof fetch;
  /** The base URL the client is given (no socket: a name for its trust store). */
  baseUrl: string;
  /** The principal's key: valid only in this process, while the engine is open; stored nowhere. */
  apiKey: string;
  /** Set with `serve`. */
  served: ServedEngine | undefined;
  /**
   * Stops taking requests, waits for the ones in flight (and a compaction pass, and the HTTP
   * listener's requests), then closes the stores and releases the data directory once the
   * writer's threads have closed their connections. Idempotent.
   */
  close(): Promise<void>;
}
