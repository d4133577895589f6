import { pino } from 'pino';
import { HefestoClient, type RetryPolicy } from '../../packages/client/src/index.js';
import { HefestoSession } from '../../packages/openai-agents/src/index.js';
import type { AppendOptions } from '../../shared/commit/append.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { StoreFactory, StorePair } from '../support/stores.js';

/**
 * The HTTP API in this process over one store pair (memory, local or the AWS emulators), and
 * HefestoSessions whose client sends its requests to it (`app.request`, no socket), with a
 * settable clock, a crash hook and a fetch that can lose replies.
 */

export const ROOT_KEY = 'root-key-for-session-tests-0123456789abcdef';

export interface SessionWorld {
  /** A session over this world's API; `lose` loses the reply of the next `lose.n` POSTs. */
  session(
    sessionId: string,
    options?: { retry?: RetryPolicy; lose?: { n: number }; largeItemBytes?: number },
  ): HefestoSession;
  client(options?: { retry?: RetryPolicy; lose?: { n: number } }): HefestoClient;
  ledger: Ledger;
  advance(ms: number): void;
  /** Throw from the append step named, once per call. */
  crashAfter(step: 'segment-written' | 'committed'): void;
  close(): Promise<void>;
}

export const startWorld = async (factory: StoreFactory): Promise<SessionWorld> => {
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
  const ledger = new Ledger({ objects: stores.objects, records: stores.records, clock }, { crash });
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT_KEY });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });

  const client = (options: { retry?: RetryPolicy; lose?: { n: number } } = {}) => {
    const lose = options.lose;
    const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const res = await app.request(String(input), init);
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
    ledger,
    advance: (ms) => {
      now += ms;
    },
    crashAfter: (step) => {
      crashes.push(step);
    },
    close: () => stores.cleanup(),
  };
};
