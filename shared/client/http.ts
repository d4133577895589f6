import { HefestoApiError, type Problem } from './errors.js';

/**
 * The client's one HTTP path: JSON in and out, problem+json to HefestoApiError, and retries
 * with capped exponential backoff and full jitter on 429, 5xx, 409 ErrIdempotencyInProgress
 * and network errors — but only for requests that are safe to repeat (reads, and writes that
 * carry an Idempotency-Key, which the server answers once however often it is sent).
 */

/**
 * How the client retries 429, 5xx and network errors.
 *
 * @example
 * ```ts
 * new HefestoClient({ baseUrl, apiKey, retry: { maxAttempts: 8, baseDelayMs: 200 } });
 * ```
 */
export interface RetryPolicy {
  /** Attempts including the first. Default 6. */
  maxAttempts?: number;
  /** First backoff ceiling. Default 100 ms. */
  baseDelayMs?: number;
  /** Backoff ceiling cap. Default 5 s. */
  maxDelayMs?: number;
}

/**
 * Options of the client's HTTP transport (HefestoClient builds it from its own).
 *
 * @example
 * ```ts
 * const transport = new Transport({ baseUrl: 'http://localhost:8787', apiKey });
 * ```
 */
export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  /** Per attempt. Default 30 s. */
  timeoutMs?: number;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * Options of one HTTP call of the transport.
 *
 * @example
 * ```ts
 * await transport.call('GET', '/v1/streams/run-1/events', { query: { from: 1 } });
 * ```
 */
export interface CallOptions {
  body?: unknown;
  /** Raw bytes sent as application/octet-stream instead of a JSON `body` (a chunk upload). */
  bytes?: Uint8Array;
  query?: Record<string, string | number | undefined>;
  idempotencyKey?: string;
  /** The writer's lease epoch (Hefesto-Fencing-Token). */
  fence?: number;
  /** The stream's incarnation the write applies to (Hefesto-Incarnation). */
  incarnation?: string;
  /** Whether a lost reply may be retried; default: reads and keyed writes. */
  repeatable?: boolean;
}

/**
 * The status, parsed JSON body and headers of a successful call.
 *
 * @example
 * ```ts
 * const { body }: CallResult<StreamHead> = await transport.call('GET', '/v1/streams/run-1');
 * ```
 */
export interface CallResult<T> {
  status: number;
  body: T;
  headers: Headers;
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

const retryAfterMs = (headers: Headers): number | undefined => {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
};

/**
 * The client's one HTTP path (see the module comment for the retry rules).
 *
 * @example
 * ```ts
 * const transport = new Transport({ baseUrl, apiKey });
 * const { body } = await transport.call('GET', '/healthz');
 * ```
 */
export class Transport {
  readonly #o: Required<Omit<TransportOptions, 'retry'>> & { retry: Required<RetryPolicy> };

  constructor(options: TransportOptions) {
    this.#o = {
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      apiKey: options.apiKey,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
      timeoutMs: options.timeoutMs ?? 30_000,
      sleep: options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      random: options.random ?? Math.random,
      retry: {
        maxAttempts: options.retry?.maxAttempts ?? 6,
        baseDelayMs: options.retry?.baseDelayMs ?? 100,
        maxDelayMs: options.retry?.maxDelayMs ?? 5_000,
      },
    };
  }

  async call<T>(method: string, path: string, options: CallOptions = {}): Promise<CallResult<T>> {
    const res = await this.#exchange(method, path, options);
    const text = await res.text();
    return {
      status: res.status,
      body: (text === '' ? undefined : JSON.parse(text)) as T,
      headers: res.headers,
    };
  }

  /**
   * Like {@link Transport.call}, with the same retries, for a route that answers raw bytes
   * (`GET /v1/chunks/{hash}`).
   *
   * @example
   * ```ts
   * const { body } = await transport.callBytes('GET', `/v1/chunks/${hash}`);
   * ```
   */
  async callBytes(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<CallResult<Uint8Array>> {
    const res = await this.#exchange(method, path, options);
    return {
      status: res.status,
      body: new Uint8Array(await res.arrayBuffer()),
      headers: res.headers,
    };
  }

  /** One logical call with its retries: the first successful response, else the error. */
  async #exchange(method: string, path: string, options: CallOptions): Promise<Response> {
    const { retry, sleep, random } = this.#o;
    const repeatable =
      options.repeatable ?? (method === 'GET' || options.idempotencyKey !== undefined);
    for (let attempt = 1; ; attempt++) {
      const backoff = () =>
        Math.floor(random() * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1)));
      let res: Response;
      try {
        res = await this.#send(method, path, options);
      } catch (err) {
        if (!repeatable || attempt >= retry.maxAttempts) {
          throw new HefestoApiError(
            'ErrUnavailable',
            0,
            `${method} ${path}: ${(err as Error).message}`,
            undefined,
            { cause: err },
          );
        }
        await sleep(backoff());
        continue;
      }
      if (res.ok) return res;
      const problem = await this.#problem(res);
      const transient =
        RETRY_STATUSES.has(res.status) || problem.code === 'ErrIdempotencyInProgress';
      if (transient && (repeatable || res.status === 429) && attempt < retry.maxAttempts) {
        await sleep(retryAfterMs(res.headers) ?? backoff());
        continue;
      }
      throw new HefestoApiError(
        problem.code,
        res.status,
        problem.detail ?? problem.title ?? `HTTP ${res.status}`,
        problem,
      );
    }
  }

  #send(method: string, path: string, options: CallOptions): Promise<Response> {
    const url = new URL(`${this.#o.baseUrl}${path}`);
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.#o.apiKey}` };
    if (options.bytes !== undefined) headers['content-type'] = 'application/octet-stream';
    else if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.fence !== undefined) headers['hefesto-fencing-token'] = String(options.fence);
    if (options.incarnation !== undefined) headers['hefesto-incarnation'] = options.incarnation;
    if (options.idempotencyKey !== undefined) {
      headers['idempotency-key'] = `"${options.idempotencyKey.replace(/(["\\])/g, '\\$1')}"`;
    }
    return this.#o.fetch(url, {
      method,
      headers,
      body:
        options.bytes ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: AbortSignal.timeout(this.#o.timeoutMs),
    });
  }

  async #problem(res: Response): Promise<Problem> {
    const text = await res.text().catch(() => '');
    try {
      const body = JSON.parse(text) as Partial<Problem>;
      if (typeof body.code === 'string') return { ...body, status: res.status, code: body.code };
    } catch {
      // not problem+json (a proxy, a gateway): keep the status
    }
    return {
      status: res.status,
      code: res.status >= 500 ? 'ErrUnavailable' : 'ErrInvalidInput',
      detail: text.slice(0, 200),
    };
  }
}
