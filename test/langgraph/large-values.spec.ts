import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { HefestoClient } from '../../shared/client/client.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * Issue 22: HefestoSaver with state values and pending writes larger than a request (the
 * server refuses ops and writes over 256 KiB; a Lambda answer is capped at 6 MB). The saver
 * sends the largest by ref (uploaded as chunks first) until a call fits, and reads them back
 * from the chunks, so a 5 MB LangGraph state works as on MemorySaver. Every request and
 * answer is measured: none carries a large value whole.
 */

const KiB = 1024;
const SIZES = [
  ['300 KiB', 300 * KiB],
  ['900 KiB', 900 * KiB],
  ['5 MB', 5_000_000],
] as const;

/** Text of `bytes` characters that does not repeat in short runs. */
const text = (bytes: number, seed: string) => {
  const unit = `${seed} the quick brown fox jumps over the lazy dog `;
  let out = '';
  for (let i = 0; out.length < bytes; i++) out += `${unit}${i} `;
  return out.slice(0, bytes);
};

/** A fetch that records the largest request body (chunk uploads apart) and answer. */
const measuredFetch = () => {
  const m = { request: 0, chunkUpload: 0, response: 0 };
  const fetcher: typeof fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const body = init?.body;
    const sent =
      typeof body === 'string'
        ? Buffer.byteLength(body)
        : body instanceof Uint8Array
          ? body.length
          : 0;
    if (url.includes('/v1/chunks/')) m.chunkUpload = Math.max(m.chunkUpload, sent);
    else m.request = Math.max(m.request, sent);
    const res = await fetch(input, init);
    const bytes = new Uint8Array(await res.arrayBuffer());
    m.response = Math.max(m.response, bytes.length);
    return new Response(bytes, { status: res.status, headers: res.headers });
  };
  return { m, fetcher };
};

const graphOf = (checkpointer: BaseCheckpointSaver, reply: string) =>
  new StateGraph(MessagesAnnotation)
    .addNode('model', () => ({ messages: [new AIMessage(reply)] }))
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer });

describe.each(backends.filter((b) => b.available))(
  'HefestoSaver, large values, on $name',
  (kind) => {
    let backend: Backend;
    beforeAll(async () => {
      backend = await kind.start();
    });
    afterAll(async () => {
      await backend?.stop();
    });
    const measured = (prefix: string) => {
      const { m, fetcher } = measuredFetch();
      const client = new HefestoClient({ baseUrl: backend.url, apiKey: ROOT, fetch: fetcher });
      return { m, saver: new HefestoSaver({ client, prefix }) };
    };
    /** No call carried a large value whole: requests within the server's limits, answers small. */
    const expectByRef = (m: { request: number; chunkUpload: number; response: number }) => {
      expect(m.request).toBeLessThan(256 * KiB);
      expect(m.chunkUpload).toBeLessThanOrEqual(KiB * KiB + 64);
      expect(m.response).toBeLessThanOrEqual(KiB * KiB + 64);
    };

    it.each(SIZES)(
      'a %s message in a StateGraph reads back as on MemorySaver',
      { timeout: 300_000 },
      async (_name, bytes) => {
        const question = text(bytes, 'q');
        const reply = text(Math.floor(bytes / 3), 'a');
        const thread = { configurable: { thread_id: `t-${bytes}` } };
        const memory = graphOf(new MemorySaver(), reply);
        const { m, saver } = measured(`big${bytes}`);
        const hefesto = graphOf(saver, reply);

        const onMemory = await memory.invoke({ messages: [new HumanMessage(question)] }, thread);
        const onHefesto = await hefesto.invoke({ messages: [new HumanMessage(question)] }, thread);
        // A second turn on top: the large values are carried over, not re-sent inline.
        await memory.invoke({ messages: [new HumanMessage('and?')] }, thread);
        await hefesto.invoke({ messages: [new HumanMessage('and?')] }, thread);

        expect(onHefesto.messages.map((x) => x.content)).toEqual(
          onMemory.messages.map((x) => x.content),
        );
        // A new worker (nothing cached) reads the thread back from the server.
        const fresh = measured(`big${bytes}`);
        const state = await graphOf(fresh.saver, reply).getState(thread);
        const expected = await memory.getState(thread);
        expect(state.values.messages.map((x: { content: unknown }) => x.content)).toEqual(
          expected.values.messages.map((x: { content: unknown }) => x.content),
        );
        expect(state.values.messages[0].content).toBe(question);
        expectByRef(m);
        expectByRef(fresh.m);
      },
    );

    it.each(SIZES)(
      'a %s pending write reads back equal, sent and read by ref',
      { timeout: 300_000 },
      async (_name, bytes) => {
        const { m, saver } = measured(`pw${bytes}`);
        const thread = { configurable: { thread_id: `w-${bytes}`, checkpoint_ns: '' } };
        await saver.getTuple(thread);
        const config = await saver.put(
          thread,
          {
            v: 4,
            id: `c-${bytes}`,
            ts: new Date().toISOString(),
            channel_values: { small: 1 },
            channel_versions: { small: 1 },
            versions_seen: {},
          },
          { source: 'loop', step: 0, parents: {} },
          { small: 1 },
        );
        const big = { doc: text(bytes, 'w'), n: bytes };
        await saver.putWrites(
          config,
          [
            ['big', big],
            ['other', text(100 * KiB, 'o')],
            ['tiny', 'x'],
          ],
          'task-1',
        );

        const fresh = measured(`pw${bytes}`);
        const tuple = await fresh.saver.getTuple(config);
        expect(tuple?.pendingWrites).toEqual([
          ['task-1', 'big', big],
          ['task-1', 'other', text(100 * KiB, 'o')],
          ['task-1', 'tiny', 'x'],
        ]);
        expectByRef(m);
        expectByRef(fresh.m);
      },
    );
  },
);
