import { Command } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient, type Json } from '../../packages/client/src/index.js';
import { COPY_EVENT, copyThread, HefestoSaver } from '../../packages/langgraph/src/index.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/copy-thread.js';
import { refundGraph, refundInput } from '../support/refund-graph.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * copyThread's bounds and crash windows (shared/domain/copy-thread.ts): a thread whose state
 * is larger than one request copies (each checkpoint sends what changed inside its channels,
 * the largest changes by ref), and a copy that dies midway, or whose replies are lost, is
 * finished by calling it again, without a duplicate checkpoint, write or copy event.
 */

const KIB = 1024;
const big = (tag: string, kib: number) =>
  Array.from({ length: kib }, (_, i) => `${tag}${i}`.padEnd(KIB - 8, '.'));

describe.each(backends)('copyThread bounds and retries ($name)', (kind) => {
  let backend: Backend;
  beforeAll(async () => {
    if (kind.available) backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const client = (f?: typeof fetch) =>
    new HefestoClient({
      baseUrl: backend.url,
      apiKey: ROOT,
      // A dead process's retries need not wait.
      ...(f ? { fetch: f, sleep: async () => {} } : {}),
    });
  const saver = (prefix: string, f?: typeof fetch) =>
    new HefestoSaver({ client: client(f), prefix });
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });

  it.skipIf(!kind.available)(
    'copies a thread whose channels add up to more than one request, the largest change by ref',
    async () => {
      // Three checkpoints as a saver could have written them, each under the server's limit:
      // a (150 KiB), then b (150 KiB), then one item dropped from the front of each (two small
      // ops). A whole /values is 300 KiB, and the third's change read as whole arrays too.
      const c = client();
      const src = 'big.src.';
      const state = (values: Record<string, unknown>) => ({ thread: 'src', ns: '', values });
      const a = big('a', 150);
      const b = big('b', 150);
      const one = await c.checkpoint(
        src,
        {
          ops: Object.entries(state({ a: { j: a } })).map(([k, v]) => ({
            op: 'set' as const,
            path: `/${k}`,
            value: v as Json,
          })),
          baseDigest: EMPTY_STATE_DIGEST_V2,
          label: 'c1',
        },
        { idempotencyKey: null },
      );
      const two = await c.checkpoint(
        src,
        {
          ops: [{ op: 'set', path: '/values/b', value: { j: b } }],
          baseDigest: one.stateDigest,
          label: 'c2',
          parentLabel: 'c1',
        },
        { idempotencyKey: null },
      );
      await c.checkpoint(
        src,
        {
          ops: [
            { op: 'delete', path: '/values/a/j/0' },
            { op: 'delete', path: '/values/b/j/0' },
          ],
          baseDigest: two.stateDigest,
          label: 'c3',
          parentLabel: 'c2',
        },
        { idempotencyKey: null },
      );
      const { checkpoints } = await copyThread(saver('big'), {
        threadId: 'src',
        newThreadId: 'dst',
      });
      expect(checkpoints).toBe(3);
      // Every copied checkpoint holds the source's values (by ref where they went so).
      const resolve = async (v: unknown) => {
        const r = (v as { r?: { hash: string; size: number } }).r;
        return r ? await c.readValue(r) : v;
      };
      for (const label of ['c1', 'c2', 'c3']) {
        const s = (await c.getCheckpointTuple(src, { label })).state as {
          values: Record<string, unknown>;
        };
        const d = (await c.getCheckpointTuple('big.dst.', { label })).state as {
          thread: string;
          values: Record<string, unknown>;
        };
        expect(d.thread).toBe('dst');
        expect(Object.keys(d.values).sort()).toEqual(Object.keys(s.values).sort());
        for (const ch of Object.keys(s.values))
          expect(await resolve(d.values[ch])).toEqual(s.values[ch]);
      }
      const head = (await c.getCheckpointTuple('big.dst.')).state as {
        values: Record<string, unknown>;
      };
      expect(Object.values(head.values).some((v) => (v as { r?: unknown }).r !== undefined)).toBe(
        true,
      );
    },
  );

  /**
   * A fetch whose process dies at the nth write, before it is sent or after it was made (its
   * reply lost): that request and every one after it fail.
   */
  const dying = (n: number, when: 'before' | 'after') => {
    let writes = 0;
    let dead = false;
    return (async (input: string | URL | Request, init?: RequestInit) => {
      if (!dead && (init?.method ?? 'GET') !== 'GET' && ++writes === n) {
        dead = true;
        if (when === 'after') await fetch(input, init);
      }
      if (dead) throw new Error(`process died at write ${n} (${when})`);
      return fetch(input, init);
    }) as typeof fetch;
  };

  const checkCopy = async (prefix: string, thread: string) => {
    const c = client();
    const stream = `${prefix}.${thread}.`;
    const { events } = await c.readEvents(stream, { limit: 1000 });
    const labels = events.filter((e) => e.type === 'hefesto.delta').length;
    const listed = await c.listCheckpoints(stream, { limit: 100 });
    const copies = events.filter((e) => e.type === COPY_EVENT);
    return { labels, checkpoints: listed.checkpoints.length, copies: copies.length };
  };

  it.skipIf(!kind.available)(
    'finishes a copy that died midway, or lost its replies, when called again: no duplicates; HefestoSaver resumes it',
    async () => {
      const s = saver('crash');
      const g = refundGraph(s);
      await g.invoke(refundInput(), cfg('src'));
      const whole = await checkCopy('crash', 'src');
      // Writes of a copy: 3 checkpoints, their tasks' writes, the copy event. Die at each.
      let n = 1;
      for (let died = true; died; n++) {
        for (const when of ['before', 'after'] as const) {
          const thread = `t${n}${when[0]}`;
          died = await copyThread(saver('crash', dying(n, when)), {
            threadId: 'src',
            newThreadId: thread,
          }).then(
            () => false,
            (err: unknown) => String(err).includes('process died'),
          );
          const { checkpoints } = await copyThread(saver('crash'), {
            threadId: 'src',
            newThreadId: thread,
          });
          expect(checkpoints).toBe(3);
          expect(await checkCopy('crash', thread)).toEqual({
            labels: whole.checkpoints,
            checkpoints: whole.checkpoints,
            copies: 1,
          });
          // Once more: answered from what is there, nothing written.
          const before = (await client().getState(`crash.${thread}.`)).seq;
          await copyThread(saver('crash'), { threadId: 'src', newThreadId: thread });
          expect((await client().getState(`crash.${thread}.`)).seq).toBe(before);
        }
      }
      // Every write of a copy was a place to die: more than its three checkpoints and event.
      expect(n).toBeGreaterThan(5);
      // The last copy that died is resumed by a worker like any thread.
      const worker = refundGraph(saver('crash'));
      const thread = `t${n - 2}a`;
      expect((await worker.getState(cfg(thread))).next).toEqual(['approve']);
      const out = await worker.invoke(new Command({ resume: 'yes' }), cfg(thread));
      expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    },
  );
});
