/**
 * The console's only door to Hefesto: the public API, with the key the user signed in with
 * as a bearer token. The key lives in memory and in this tab's sessionStorage (gone when the
 * tab closes); it is never put in a URL, a log or localStorage.
 */

const KEY_SLOT = 'hefesto.console.key';

export interface Problem {
  status: number;
  code: string;
  detail: string;
  firstBadSeq?: number;
  [extra: string]: unknown;
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.code}: ${problem.detail}`);
    this.name = 'ApiError';
  }
  get status(): number {
    return this.problem.status;
  }
  get code(): string {
    return this.problem.code;
  }
}

export interface Principal {
  tenant: string;
  scopes: string[];
  keyId?: string;
}

type Query = Record<string, string | number | undefined>;

const withQuery = (path: string, query: Query = {}): string => {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query))
    if (v !== undefined && v !== '') params.set(k, `${v}`);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
};

export class Api {
  readonly #key: string;

  constructor(key: string) {
    this.#key = key;
  }

  async #send<T>(
    method: string,
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<T> {
    const headers: Record<string, string> = { ...extra, authorization: `Bearer ${this.#key}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (!res.ok) {
      const p = (parsed ?? {}) as Partial<Problem>;
      throw new ApiError({
        ...p,
        status: res.status,
        code: p.code ?? `HTTP ${res.status}`,
        detail: p.detail ?? res.statusText,
      });
    }
    return parsed as T;
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.#send('GET', withQuery(path, query));
  }

  /** POST with a JSON body (and headers such as Idempotency-Key). */
  post<T>(path: string, body: unknown, headers?: Record<string, string>): Promise<T> {
    return this.#send('POST', path, body, headers);
  }

  /** Who this key is; 401 ApiError for a wrong or revoked key. */
  whoami(): Promise<Principal> {
    return this.get('/v1/whoami');
  }
}

export const stream = (id: string, rest = ''): string =>
  `/v1/streams/${encodeURIComponent(id)}${rest}`;

export const session = {
  load: (): string | undefined => sessionStorage.getItem(KEY_SLOT) ?? undefined,
  save: (key: string): void => sessionStorage.setItem(KEY_SLOT, key),
  clear: (): void => sessionStorage.removeItem(KEY_SLOT),
};

export interface StreamHead {
  streamId: string;
  seq: number;
  hash: string;
  stateDigest: string;
  deltas: number;
  stateSeq: number;
  createdAt: string;
  updatedAt: string;
}

export interface LedgerEvent {
  seq: number;
  ts: number;
  type: string;
  payload: unknown;
  prevHash: string;
  hash: string;
}

export interface EventsPage {
  events: LedgerEvent[];
  next: number | null;
}

/**
 * A page of a stream's events from `query.from` (default 1), or from just past the pruning
 * point when retention or a session's clear removed the events before it (ErrPruned carries
 * `prunedSeq`). `prunedSeq` says where the kept events start (0: nothing was pruned).
 */
export const eventsFrom = async (
  api: Api,
  id: string,
  query: { from?: number; limit?: number; type?: string } = {},
): Promise<EventsPage & { prunedSeq: number }> => {
  const from = query.from ?? 1;
  try {
    return {
      ...(await api.get<EventsPage>(stream(id, '/events'), { ...query, from })),
      prunedSeq: 0,
    };
  } catch (err) {
    const pruned =
      err instanceof ApiError && err.code === 'ErrPruned' ? err.problem.prunedSeq : undefined;
    if (typeof pruned !== 'number' || !Number.isInteger(pruned) || pruned < from) throw err;
    const page = await api.get<EventsPage>(stream(id, '/events'), { ...query, from: pruned + 1 });
    return { ...page, prunedSeq: pruned };
  }
};

export interface StreamRow {
  streamId: string;
  seq: number;
  /** ISO 8601, as every route gives times. */
  updatedAt: string;
  lease: { owner: string; epoch: number; draining: boolean; expiresAt: string } | null;
}

export type VerifyResult =
  | { ok: true; seq: number; hash: string }
  | { ok: false; code: string; firstBadSeq: number; object: string; seq: number };
