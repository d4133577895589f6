import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientVerificationError, HefestoClient } from '../../packages/client/src/index.js';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * Requests per saver call, counted at the client's fetch (behaviour, not timing), on the API
 * in process over the memory and local stores. Before issue 24 a getTuple was 3 requests
 * (state, label, writes), a put branching from an older checkpoint 3, and
 * getDeltaChannelHistory 3 per ancestor.
 */

const ckpt = (id: string, n: number) => ({
  v: 4,
  id,
  ts: new Date().toISOString(),
  channel_values: { messages: Array.from({ length: n }, (_, i) => `m${i}`) },
  channel_versions: { messages: n },
  versions_seen: {},
});
const meta = { source: 'loop' as const, step: 0, parents: {} };
const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };
const at = (id: string) => ({ configurable: { ...thread.configurable, checkpoint_id: id } });

describe.each(STORE_FACTORIES)('saver requests per call on $name', (factory) => {
  let h: Harness;
  /** `METHOD path` of each request sent, and the `answer` of each tuple read. */
  let sent: string[];
  let answers: string[];
  const counting = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    sent.push(`${init?.method ?? 'GET'} ${url.pathname.replace('/v1/streams/rq.t./', '')}`);
    const res = await h.app.fetch(new Request(input, init));
    if (url.pathname.endsWith('/tuple') && res.ok) {
      answers.push(((await res.clone().json()) as { answer: string }).answer);
    }
    return res;
  }) as typeof fetch;
  const fresh = () =>
    new HefestoSaver({
      client: new HefestoClient({
        baseUrl: 'http://in-process',
        apiKey: ROOT_KEY,
        fetch: counting,
      }),
      prefix: 'rq',
    });
  const sentBy = async (call: () => Promise<unknown>): Promise<string[]> => {
    sent = [];
    answers = [];
    await call();
    return sent;
  };
  const chain = async (saver: HefestoSaver, n: number) => {
    let config = await saver.put(thread, ckpt('id-00', 1), meta, { messages: 1 });
    for (let i = 1; i < n; i++) {
      const id = `id-${String(i).padStart(2, '0')}`;
      config = await saver.put(config, ckpt(id, i + 1), meta, { messages: i + 1 });
    }
    return config;
  };
  beforeEach(() => {
    h = createHarness(factory);
    sent = [];
    answers = [];
  });
  afterEach(() => h.close());

  it('reads a tuple in one request: the full state cold, nothing of it when unchanged', async () => {
    const saver = fresh();
    expect(await sentBy(() => saver.getTuple(thread))).toEqual(['GET tuple']);
    const config = await chain(saver, 3);
    expect(await sentBy(() => saver.getTuple(thread))).toEqual(['GET tuple']);
    expect(answers).toEqual(['unchanged']);
    const other = fresh();
    expect(await sentBy(() => other.getTuple(thread))).toEqual(['GET tuple']);
    expect(answers).toEqual(['state']);
    expect(await sentBy(() => other.getTuple(at('id-01')))).toEqual(['GET tuple']);
    expect(await sentBy(() => other.getTuple(config))).toEqual(['GET tuple']);
    expect(answers).toEqual(['unchanged']);
  });

  it('reads only the deltas since when another worker moved the thread', async () => {
    const [a, b] = [fresh(), fresh()];
    const config = await chain(a, 2);
    expect((await b.getTuple(thread))?.checkpoint.id).toBe('id-01');
    await a.put(config, ckpt('id-02', 3), meta, { messages: 3 });

    expect(await sentBy(() => b.getTuple(thread))).toEqual(['GET tuple']);
    expect(answers).toEqual(['deltas']);
    expect((await fresh().getTuple(thread))?.checkpoint).toEqual(
      (await b.getTuple(thread))?.checkpoint,
    );
  });

  it('puts and writes in one request each; a put branching from an older checkpoint in two', async () => {
    const saver = fresh();
    const config = await chain(saver, 2);
    expect(await sentBy(() => saver.put(config, ckpt('id-02', 3), meta, { messages: 3 }))).toEqual([
      'POST checkpoints',
    ]);
    expect(await sentBy(() => saver.putWrites(at('id-02'), [['messages', 'x']], 'task-1'))).toEqual(
      ['POST checkpoints/id-02/writes'],
    );
    expect(
      await sentBy(() => saver.put(at('id-00'), ckpt('id-03', 2), meta, { messages: 2 })),
    ).toEqual(['GET tuple', 'POST checkpoints']);
  });

  it('answers getDeltaChannelHistory in one request whatever the depth', async () => {
    for (const depth of [2, 30]) {
      h.close();
      h = createHarness(factory);
      const s = fresh();
      let config = await s.put(thread, ckpt('id-00', 1), meta, { messages: 1 });
      for (let i = 1; i < depth; i++) {
        const c = { ...ckpt(`id-${String(i).padStart(2, '0')}`, 1), channel_values: {} };
        await s.putWrites(config, [['messages', `w${i}`]], `task-${i}`);
        config = await s.put(config, c, meta, { messages: i + 1 });
      }
      const history = () => s.getDeltaChannelHistory({ config: thread, channels: ['messages'] });
      expect(await sentBy(history)).toEqual(['GET channel-history']);
      const { messages } = await history();
      expect(messages?.seed).toEqual(['m0']);
      expect(messages?.writes.map((w) => w[2])).toEqual(
        Array.from({ length: depth - 1 }, (_, i) => `w${i + 1}`),
      );
    }
  });

  it('lists a page of a thread in one request, the same tuples getTuple reads', async () => {
    const saver = fresh();
    await chain(saver, 14);
    await saver.putWrites(at('id-12'), [['messages', 'w']], 'task-1');
    const page = async (options: Parameters<HefestoSaver['list']>[1]) => {
      const out = [];
      for await (const t of fresh().list(thread, options)) out.push(t);
      return out;
    };
    let tuples: Awaited<ReturnType<typeof page>> = [];
    expect(await sentBy(async () => (tuples = await page({ limit: 10 })))).toEqual(['GET tuples']);
    expect(tuples.map((t) => t.checkpoint.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `id-${String(13 - i).padStart(2, '0')}`),
    );
    for (const t of tuples) expect(t).toEqual(await fresh().getTuple(t.config));
    expect(
      await sentBy(async () => (tuples = await page({ limit: 3, before: at('id-05') }))),
    ).toEqual(['GET tuples']);
    expect(tuples.map((t) => t.checkpoint.id)).toEqual(['id-04', 'id-03', 'id-02']);
  });

  it('keeps no idempotency record per put; a put whose reply was lost is retried and lands once', async () => {
    let dropped = 0;
    const losing = (async (input: string | URL | Request, init?: RequestInit) => {
      const res = await counting(input, init);
      // The checkpoint is committed, its reply lost on the way back (once).
      if (init?.method === 'POST' && String(input).endsWith('/checkpoints') && dropped++ === 1) {
        throw new TypeError('fetch failed');
      }
      return res;
    }) as typeof fetch;
    const saver = new HefestoSaver({
      client: new HefestoClient({
        baseUrl: 'http://in-process',
        apiKey: ROOT_KEY,
        fetch: losing,
        retry: { baseDelayMs: 1 },
      }),
      prefix: 'rq',
    });
    const config = await chain(saver, 3);
    expect(dropped).toBe(4); // three puts and the retry of the second
    await saver.put(config, ckpt('id-03', 4), meta, { messages: 4 });

    const pk = 't#default#s#rq.t.';
    const items = (await h.records.query(pk, { limit: 1000 })).items.map((i) => String(i.sk));
    expect(items.filter((sk) => sk.startsWith('ikey#'))).toEqual([]);
    expect(items.filter((sk) => sk.startsWith('label#')).sort()).toEqual(
      ['id-00', 'id-01', 'id-02', 'id-03'].map((id) => `label#${id}`),
    );
    const { events } = await h.ledger.reader.readEvents('default', 'rq.t.', {});
    expect(events.map((e) => (e.payload as { label?: string }).label)).toEqual([
      'id-00',
      'id-01',
      'id-02',
      'id-03',
    ]);
    expect((await fresh().getTuple(thread))?.parentConfig?.configurable?.checkpoint_id).toBe(
      'id-02',
    );
  });

  it('verify: checks a conditional answer’s state against its digest, and refuses a forged delta', async () => {
    let forge = false;
    const forging = (async (input: string | URL | Request, init?: RequestInit) => {
      const res = await counting(input, init);
      if (!forge || !String(input).includes('/tuple')) return res;
      const body = (await res.json()) as { deltas?: Array<{ ops: Array<{ value?: unknown }> }> };
      const op = body.deltas?.[0]?.ops[0];
      if (op) op.value = 'forged';
      return new Response(JSON.stringify(body), { status: 200, headers: res.headers });
    }) as typeof fetch;
    const client = new HefestoClient({
      baseUrl: 'http://in-process',
      apiKey: ROOT_KEY,
      fetch: forging,
      verify: true,
    });
    const writer = fresh();
    await chain(writer, 2);
    const cold = await client.getCheckpointTuple('rq.t.');
    const held = {
      seq: cold.seq,
      stateDigest: cold.stateDigest,
      state: structuredClone(cold.state),
    };
    expect((await client.getCheckpointTuple('rq.t.', { since: held })).answer).toBe('unchanged');
    await writer.put(at('id-01'), ckpt('id-02', 3), meta, { messages: 3 });
    const moved = await client.getCheckpointTuple('rq.t.', {
      since: { ...held, state: structuredClone(held.state) },
    });
    expect(moved.answer).toBe('deltas');
    expect(moved.checkpoint?.label).toBe('id-02');

    await writer.put(at('id-02'), ckpt('id-03', 4), meta, { messages: 4 });
    forge = true;
    await expect(
      client.getCheckpointTuple('rq.t.', {
        since: { seq: moved.seq, stateDigest: moved.stateDigest, state: moved.state },
      }),
    ).rejects.toBeInstanceOf(ClientVerificationError);
  });
});
