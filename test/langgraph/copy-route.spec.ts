import { Command } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient, type Json } from '../../packages/client/src/index.js';
import { COPY_EVENT, HefestoSaver } from '../../packages/langgraph/src/index.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/copy-thread.js';
import { refundGraph, refundInput } from '../support/refund-graph.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * POST /v1/streams/{id}/copy-thread (shared/http/routes/copy-thread.ts) on the real servers:
 * the copy the console's "Fork this run" makes, a bounded part per call, resumed by
 * HefestoSaver; its refusals (bad input, another tenant's stream, a read-only key, a target
 * with a history of its own) write nothing, a state larger than one request copies (its
 * largest change stored as chunks by the server), and a call whose answer was lost is
 * finished by calling again, with no duplicate.
 */

const KIB = 1024;
const big = (tag: string, kib: number) =>
  Array.from({ length: kib }, (_, i) => `${tag}${i}`.padEnd(KIB - 8, '.'));

interface Progress {
  done: boolean;
  checkpoints: number;
  copied: number;
  streamId: string;
}

describe.each(backends)('POST /v1/streams/{id}/copy-thread ($name)', (kind) => {
  let backend: Backend;
  beforeAll(async () => {
    if (kind.available) backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const client = () => new HefestoClient({ baseUrl: backend.url, apiKey: ROOT });
  const saver = (prefix: string) =>
    new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix });
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });
  const copy = (stream: string, body: unknown, key = ROOT) =>
    fetch(`${backend.url}/v1/streams/${stream}/copy-thread`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  /** Calls until done; answers each call's progress. */
  const copyAll = async (stream: string, body: Record<string, unknown>) => {
    const seen: Progress[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await copy(stream, body);
      expect(res.status).toBe(200);
      const p = (await res.json()) as Progress;
      seen.push(p);
      if (p.done) return seen;
    }
    throw new Error('never done');
  };
  const newKey = async (tenant: string, scopes: string[]) => {
    const res = await fetch(`${backend.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant, scopes }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { key: string }).key;
  };
  const counts = async (stream: string) => {
    const { events } = await client().readEvents(stream, { limit: 1000 });
    return {
      deltas: events.filter((e) => e.type === 'hefesto.delta').length,
      copies: events.filter((e) => e.type === COPY_EVENT).length,
      seq: events.at(-1)?.seq,
    };
  };
  const headOf = async (stream: string) =>
    (await client().getCheckpointTuple(stream)).checkpoint?.label;

  it.skipIf(!kind.available)(
    'copies an interrupted thread a part per call into one HefestoSaver resumes',
    async () => {
      const g = refundGraph(saver('rt1'));
      await g.invoke(refundInput(), cfg('src'));
      const label = await headOf('rt1.src.');
      const seen = await copyAll('rt1.src.', {
        label,
        to: { streamId: 'rt1.copy.', threadId: 'copy' },
        maxCheckpoints: 1,
      });
      expect(seen.map((p) => [p.done, p.copied])).toEqual([
        [false, 1],
        [false, 2],
        [true, 3],
      ]);
      expect(seen.every((p) => p.checkpoints === 3 && p.streamId === 'rt1.copy.')).toBe(true);
      expect(await counts('rt1.copy.')).toMatchObject({ deltas: 3, copies: 1 });
      const worker = refundGraph(saver('rt1'));
      expect((await worker.getState(cfg('copy'))).next).toEqual(['approve']);
      const out = await worker.invoke(new Command({ resume: 'yes' }), cfg('copy'));
      expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
      expect((await worker.getState(cfg('src'))).next).toEqual(['approve']);
    },
  );

  it.skipIf(!kind.available)(
    'refuses bad input (400), another tenant’s stream (404) and a read-only key (403), writing nothing',
    async () => {
      const g = refundGraph(saver('rt2'));
      await g.invoke(refundInput(), cfg('src'));
      const to = { streamId: 'rt2.dst.', threadId: 'dst' };
      for (const body of [
        {},
        { to: { streamId: 'no spaces', threadId: 'dst' } },
        { to, maxCheckpoints: 0 },
        { to, extra: 1 },
        { to: { streamId: 'rt2.src.', threadId: 'src' } },
      ]) {
        const res = await copy('rt2.src.', body);
        expect(res.status, JSON.stringify(body)).toBe(400);
      }
      const other = await copy('rt2.src.', { to }, await newKey('rt2-other', ['read', 'write']));
      expect(other.status).toBe(404);
      expect(((await other.json()) as { code: string }).code).toBe('ErrStreamNotFound');
      const reader = await copy('rt2.src.', { to }, await newKey('rt2-other', ['read']));
      expect(reader.status).toBe(403);
      const res = await fetch(`${backend.url}/v1/streams/rt2.dst.`, {
        headers: { authorization: `Bearer ${ROOT}` },
      });
      expect(res.status).toBe(404);
    },
  );

  it.skipIf(!kind.available)(
    'refuses a target with a history of its own (409), before writing anything to it',
    async () => {
      const g = refundGraph(saver('rt3'));
      await g.invoke(refundInput(), cfg('src'));
      await g.invoke(refundInput(), cfg('mine'));
      await client().append('rt3.plain.', [{ type: 'note', payload: { hi: 1 } }]);
      for (const [stream, threadId] of [
        ['rt3.mine.', 'mine'],
        ['rt3.plain.', 'plain'],
      ] as const) {
        const before = await counts(stream);
        const res = await copy('rt3.src.', { to: { streamId: stream, threadId } });
        expect(res.status).toBe(409);
        const problem = (await res.json()) as { code: string; detail: string };
        expect(problem.code).toBe('ErrStreamExists');
        expect(problem.detail).toMatch(/exists with a history of its own/);
        expect(await counts(stream)).toEqual(before);
      }
    },
  );

  it.skipIf(!kind.available)(
    'copies a state larger than one request (past 192 KiB), its largest change by ref',
    async () => {
      const c = client();
      const a = big('a', 150);
      const b = big('b', 150);
      const one = await c.checkpoint(
        'rt4.src.',
        {
          ops: [
            { op: 'set', path: '/thread', value: 'src' },
            { op: 'set', path: '/ns', value: '' },
            { op: 'set', path: '/values', value: { a: { j: a } } as Json },
          ],
          baseDigest: EMPTY_STATE_DIGEST_V2,
          label: 'c1',
        },
        { idempotencyKey: null },
      );
      const two = await c.checkpoint(
        'rt4.src.',
        {
          ops: [{ op: 'set', path: '/values/b', value: { j: b } }],
          baseDigest: one.stateDigest,
          label: 'c2',
          parentLabel: 'c1',
        },
        { idempotencyKey: null },
      );
      // Two small ops that the copy's diff reads as two whole arrays (299 KiB): the change the
      // console's in-browser copy refused.
      await c.checkpoint(
        'rt4.src.',
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
      const seen = await copyAll('rt4.src.', { to: { streamId: 'rt4.dst.', threadId: 'dst' } });
      expect(seen.at(-1)).toMatchObject({ done: true, checkpoints: 3, copied: 3 });
      const d = (await c.getCheckpointTuple('rt4.dst.', { label: 'c3' })).state as {
        thread: string;
        values: Record<string, { r?: { hash: string } } | { j: string[] }>;
      };
      expect(d.thread).toBe('dst');
      const resolve = async (v: unknown) => {
        const r = (v as { r?: { hash: string; size: number } }).r;
        return r ? await c.readValue(r) : v;
      };
      expect(await resolve(d.values.a)).toEqual({ j: a.slice(1) });
      expect(await resolve(d.values.b)).toEqual({ j: b.slice(1) });
      expect(Object.values(d.values).some((v) => (v as { r?: unknown }).r !== undefined)).toBe(
        true,
      );
    },
  );

  it.skipIf(!kind.available)(
    'finishes a copy whose answers were lost when the same call is made again, with no duplicate',
    async () => {
      const g = refundGraph(saver('rt5'));
      await g.invoke(refundInput(), cfg('src'));
      const body = { to: { streamId: 'rt5.dst.', threadId: 'dst' }, maxCheckpoints: 1 };
      // Each call twice: the first one's answer "lost", the second made as a client retries.
      const answers: Progress[] = [];
      for (let i = 0; i < 4; i++) {
        await copy('rt5.src.', body);
        answers.push((await (await copy('rt5.src.', body)).json()) as Progress);
      }
      expect(answers.map((p) => [p.done, p.copied])).toEqual([
        [false, 2],
        [true, 3],
        [true, 3],
        [true, 3],
      ]);
      const after = await counts('rt5.dst.');
      expect(after).toMatchObject({ deltas: 3, copies: 1 });
      // Done already: answered from what is there, nothing written.
      await copyAll('rt5.src.', body);
      expect(await counts('rt5.dst.')).toEqual(after);
      const worker = refundGraph(saver('rt5'));
      const out = await worker.invoke(new Command({ resume: 'no' }), cfg('dst'));
      expect(out.messages.at(-1)?.content).toBe('No refund made.');
    },
  );
});
