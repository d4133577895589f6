import { Command } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import { COPY_EVENT, HefestoSaver } from '../../packages/langgraph/src/index.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import { refundGraph, refundInput } from '../support/refund-graph.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from './harness.js';

/**
 * POST /v1/streams/{id}/copy-thread dying midway inside the server: the object store stops
 * answering at its nth write (before it, or after it was made with the answer lost), the call
 * fails, the "restarted" store answers again, and the same call, repeated until done,
 * finishes the copy with no duplicate checkpoint, write or copy event; HefestoSaver resumes
 * it. (test/langgraph/copy-route.spec.ts covers the route on the real servers.)
 */

const WRITES = new Set(['putIfAbsent', 'putIfMatch', 'delete']);

/** An object store that dies at its nth write (`arm(n, when)`) until `revive()`. */
const dyingStore = () => {
  let left = 0;
  let when: 'before' | 'after' = 'before';
  let dead = false;
  let died = false;
  const wrap = (inner: ObjectStore): ObjectStore =>
    new Proxy(inner, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return async (...args: unknown[]) => {
          if (dead) throw new Error('the process is dead');
          if (WRITES.has(String(prop)) && left > 0 && --left === 0) {
            dead = true;
            died = true;
            if (when === 'after') await (v as (...a: unknown[]) => unknown).apply(target, args);
            throw new Error('the process died');
          }
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  return {
    wrap,
    arm: (n: number, w: 'before' | 'after') => {
      left = n;
      when = w;
      died = false;
    },
    revive: () => {
      dead = false;
      left = 0;
      return died;
    },
  };
};

describe.each(STORE_FACTORIES)('copy-thread dying midway ($name)', (factory) => {
  let h: Harness | undefined;
  afterEach(() => h?.close());

  it('is finished by calling again after a death at any write, with no duplicate', async () => {
    const dying = dyingStore();
    h = createHarness(factory, { wrapObjects: dying.wrap });
    const app = h.app;
    const client = new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: ROOT_KEY,
      fetch: ((input: string | URL | Request, init?: RequestInit) =>
        app.request(input instanceof Request ? input : String(input), init)) as typeof fetch,
      sleep: async () => {},
    });
    const saver = () => new HefestoSaver({ client, prefix: 'die' });
    const cfg = (thread_id: string) => ({ configurable: { thread_id } });
    await refundGraph(saver()).invoke(refundInput(), cfg('src'));
    const copy = (threadId: string) =>
      h?.request('/v1/streams/die.src./copy-thread', {
        key: ROOT_KEY,
        body: { to: { streamId: `die.${threadId}.`, threadId }, maxCheckpoints: 2 },
      }) as Promise<Response>;
    const counts = async (stream: string) => {
      const { events } = await client.readEvents(stream, { limit: 1000 });
      return {
        deltas: events.filter((e) => e.type === 'hefesto.delta').length,
        copies: events.filter((e) => e.type === COPY_EVENT).length,
        checkpoints: (await client.listCheckpoints(stream, { limit: 100 })).checkpoints.length,
      };
    };

    let n = 1;
    for (let died = true; died; n++) {
      for (const when of ['before', 'after'] as const) {
        const thread = `t${n}${when[0]}`;
        dying.arm(n, when);
        // Calls until done or dead: the death may come in the first call or a later one.
        for (let i = 0; i < 10; i++) {
          const res = await copy(thread);
          if (res.status !== 200 || ((await res.json()) as { done: boolean }).done) break;
        }
        died = dying.revive();
        for (let i = 0; i < 10; i++) {
          const res = await copy(thread);
          expect(res.status).toBe(200);
          if (((await res.json()) as { done: boolean }).done) break;
        }
        expect(await counts(`die.${thread}.`)).toEqual({ deltas: 3, copies: 1, checkpoints: 3 });
      }
    }
    // Every object write of a copy was a place to die (its segments, at least one per step).
    expect(n).toBeGreaterThan(5);
    const worker = refundGraph(saver());
    const thread = `t${n - 2}a`;
    expect((await worker.getState(cfg(thread))).next).toEqual(['approve']);
    const out = await worker.invoke(new Command({ resume: 'yes' }), cfg(thread));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
  });
});
