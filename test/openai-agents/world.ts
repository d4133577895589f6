import { pino } from 'pino';
import {
  HefestoApiError,
  HefestoClient,
  type HefestoClientOptions,
  type RetryPolicy,
} from '../../packages/client/src/index.js';
import { HefestoSession } from '../../packages/openai-agents/src/index.js';
import type { Problem } from '../../shared/client/errors.js';
import type { AppendOptions } from '../../shared/commit/append.js';
import { Compactor } from '../../shared/compaction/compactor.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import type { StoreFactory, StorePair } from '../support/stores.js';

/**
 * The HTTP API in this process over one store pair (memory, local or the AWS emulators), and
 * HefestoSessions whose client sends its requests to it (`app.request`, no socket), with a
 * settable clock, a crash hook and a fetch that can lose replies.
 */

const COMPACT_GRACE = 10_000;

export const ROOT_KEY = 'root-key-for-session-tests-0123456789abcdef';

interface ClientOptions {
  retry?: RetryPolicy;
  /** Loses the reply of the next `n` POSTs (after the server answered them). */
  lose?: { n: number };
  /** Rewrites each answer's JSON body before the client reads it. */
  forge?: (body: Record<string, unknown>) => Record<string, unknown>;
  /** Each request sent, as `METHOD /path` (the query left out). */
  sent?: string[];
  /** Options of the client passed as they are (`verify`, `trustStore`). */
  client?: Partial<HefestoClientOptions>;
}

export interface SessionWorld {
  /** A session over this world's API; `lose` loses the reply of the next `lose.n` POSTs. */
  session(sessionId: string, options?: ClientOptions & { largeItemBytes?: number }): HefestoSession;
  client(options?: ClientOptions): HefestoClient;
  ledger: Ledger;
  /** A new server process over the same stores (nothing warm in its memory). */
  restart(): void;
  stores: StorePair;
  /** A GET of the API as the root key, its JSON answer (a ProofGet: the audit's reads). */
  get(path: string, query?: Record<string, string | number | undefined>): Promise<unknown>;
  /** Compactor runs until nothing is due, the clock moving past each grace period. */
  compact(): Promise<void>;
  advance(ms: number): void;
  /** Throw from the append step named, once per call. */
  crashAfter(step: 'segment-written' | 'committed'): void;
  close(): Promise<void>;
}

export const startWorld = async (
  factory: StoreFactory,
  settings: { newStreamDigestVersion?: 1 | 2 } = {},
): Promise<SessionWorld> => {
  let now = Date.now();
  const clock: Clock = { now: () => now };
  const stores: StorePair = await factory.make(clock);
  let crashes: string[] = [];
  const crash: AppendOptions['crash'] = (step) => {
    const i = crashes.indexOf(step);
    if (i < 0) return;
    crashes = crashes.filter((_, j) => j !== i);
    throw new Error(`process died after ${step}`);
  };
  const signing = new KeyRing(new FakeSigner('sessions'));
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT_KEY });
  const serve = () => {
    const ledger = new Ledger(
      { objects: stores.objects, records: stores.records, clock },
      { crash, signing, ...settings },
    );
    return { ledger, app: createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock }) };
  };
  let { ledger, app } = serve();

  const client = (options: ClientOptions = {}) => {
    const { lose, forge } = options;
    const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      options.sent?.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      let res = await app.request(String(input), init);
      if (forge && res.headers.get('content-type')?.includes('application/json')) {
        const body = forge((await res.json()) as Record<string, unknown>);
        res = new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
      }
      if (lose && lose.n > 0 && init?.method === 'POST') {
        lose.n--;
        await res.arrayBuffer();
        throw new TypeError('fetch failed: the reply was lost');
      }
      return res;
    }) as typeof globalThis.fetch;
    return new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: ROOT_KEY,
      fetch,
      retry: options.retry ?? { maxAttempts: 4, baseDelayMs: 1 },
      sleep: async () => {
        now += 3_000; // a retry comes later: past the grace of an in-flight write
      },
      ...options.client,
    });
  };
  return {
    session: (sessionId, options) =>
      new HefestoSession({
        sessionId,
        client: client(options),
        ...(options?.largeItemBytes === undefined
          ? {}
          : { largeItemBytes: options.largeItemBytes }),
      }),
    client,
    get ledger() {
      return ledger;
    },
    restart: () => {
      ({ ledger, app } = serve());
    },
    stores,
    get: async (path, query = {}) => {
      const url = new URL(path, 'http://hefesto.test');
      for (const [k, v] of Object.entries(query))
        if (v !== undefined) url.searchParams.set(k, String(v));
      const res = await app.request(url.toString(), {
        headers: { authorization: `Bearer ${ROOT_KEY}` },
      });
      const body = (await res.json()) as Problem;
      if (!res.ok)
        throw new HefestoApiError(body.code as never, res.status, body.detail ?? '', body);
      return body;
    },
    compact: async () => {
      for (let i = 0; i < 6; i++) {
        await new Compactor({
          objects: stores.objects,
          records: stores.records,
          clock,
          ids: { newId: () => `compactor-${now}-${i}` },
          states: ledger.states,
          graceMs: COMPACT_GRACE,
        }).run();
        now += COMPACT_GRACE * 2;
      }
    },
    advance: (ms) => {
      now += ms;
    },
    crashAfter: (step) => {
      crashes.push(step);
    },
    close: () => stores.cleanup(),
  };
};
