import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { type Backend, backends, ROOT } from './backends.js';

/** What HefestoSaver does beyond LangGraph's conformance suite, on each backend. */

describe.each(backends.filter((b) => b.available))('HefestoSaver on $name', (kind) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const saver = (prefix: string) =>
    new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix });
  const ckpt = (id: string, n: number) => ({
    v: 4,
    id,
    ts: new Date().toISOString(),
    channel_values: { messages: Array.from({ length: n }, (_, i) => `m${i}`) },
    channel_versions: { messages: n },
    versions_seen: {},
  });
  const meta = { source: 'loop' as const, step: 0, parents: {} };

  it('refuses a stale second worker instead of forking; explicit time travel still branches', async () => {
    const [a, b, c] = [saver('two'), saver('two'), saver('two')];
    const thread = { configurable: { thread_id: 'w', checkpoint_ns: '' } };
    expect(await a.getTuple(thread)).toBeUndefined();
    const p0 = await a.put(thread, ckpt('id-0', 1), meta, { messages: 1 });
    expect((await b.getTuple(thread))?.checkpoint.id).toBe('id-0');
    const p1 = await a.put(p0, ckpt('id-1', 2), meta, { messages: 2 });
    await expect(b.put(p0, ckpt('id-1b', 2), meta, { messages: 2 })).rejects.toThrow(
      /moved since this worker read it/,
    );
    expect((await c.getTuple(thread))?.checkpoint.id).toBe('id-1');
    // Time travel: a config naming the old checkpoint branches from it (one ledger).
    expect((await c.getTuple(p0))?.checkpoint.id).toBe('id-0');
    await c.put(p0, ckpt('id-2', 2), meta, { messages: 2 });
    const latest = await a.getTuple(thread);
    expect(latest?.checkpoint.id).toBe('id-2');
    expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe('id-0');
    expect((await a.getTuple(p1))?.checkpoint.channel_values).toEqual({ messages: ['m0', 'm1'] });
  });

  it('lets a put wait for its tip’s writes still in flight, so none lands after the freeze', async () => {
    // Writes answered late, as under load: the next put must not freeze the tip before them.
    const slow = (async (input: string | URL | Request, init?: RequestInit) => {
      if (init?.method === 'POST' && String(input).endsWith('/writes')) {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return fetch(input, init);
    }) as typeof fetch;
    const client = new HefestoClient({ baseUrl: backend.url, apiKey: ROOT, fetch: slow });
    const s = new HefestoSaver({ client, prefix: 'slow' });
    const thread = { configurable: { thread_id: 's', checkpoint_ns: '' } };
    await s.getTuple(thread);
    const p0 = await s.put(thread, ckpt('s-0', 1), meta, { messages: 1 });
    const writing = s.putWrites(p0, [['messages', 'w0']], 'task-1');
    await s.put(p0, ckpt('s-1', 2), meta, { messages: 2 });
    await writing;
    const { events } = await s.client.readEvents(s.streamIdOf('s'));
    expect(events.map((e) => e.type)).toEqual(['hefesto.delta', 'hefesto.delta']);
    expect(events[1]?.payload).toMatchObject({ leaves: 's-0' });
    expect((await s.getTuple(p0))?.pendingWrites).toEqual([['task-1', 'messages', 'w0']]);
  });

  it('writes a messages list grown by one as one append op', async () => {
    const s = saver('ops');
    const thread = { configurable: { thread_id: 'g', checkpoint_ns: 'a|b' } };
    await s.getTuple(thread);
    let config = await s.put(thread, ckpt('g-0', 3), meta, { messages: 3 });
    config = await s.put(config, ckpt('g-1', 4), meta, { messages: 4 });
    const events = await s.client.readEvents(s.streamIdOf('g', 'a|b'), { type: 'hefesto.delta' });
    const second = events.events[1];
    const ops = second ? (second.payload as { ops: Array<{ path: string }> }).ops : [];
    expect(ops.filter((o) => o.path.startsWith('/values'))).toEqual([
      { op: 'set', path: '/values/messages/j/-', value: 'm3' },
    ]);
    expect(config.configurable?.checkpoint_ns).toBe('a|b');
  });

  it('runs a graph under each durability mode (async: writes wait for their checkpoint)', async () => {
    for (const durability of ['async', 'sync', 'exit'] as const) {
      const graph = new StateGraph(MessagesAnnotation)
        .addNode('model', (st) => ({ messages: [new AIMessage(`n${st.messages.length}`)] }))
        .addNode('tool', (st) => ({ messages: [new AIMessage(`t${st.messages.length}`)] }))
        .addEdge(START, 'model')
        .addEdge('model', 'tool')
        .addEdge('tool', END)
        .compile({ checkpointer: saver(`dur-${durability}`) });
      const checkpointer = graph.checkpointer as HefestoSaver;
      const config = { configurable: { thread_id: 'd' }, durability };
      for (const text of ['a', 'b', 'c']) {
        await graph.invoke({ messages: [new HumanMessage(text)] }, config);
      }
      const state = await graph.getState({ configurable: { thread_id: 'd' } });
      expect(state.values.messages.map((m: { content: unknown }) => m.content)).toEqual([
        'a',
        'n1',
        't2',
        'b',
        'n4',
        't5',
        'c',
        'n7',
        't8',
      ]);
      // Every checkpoint but the last two has its writes bound by the delta after the next,
      // and none landed after its freeze (which would have cost a hefesto.writes append).
      const stream = checkpointer.streamIdOf('d');
      const { events } = await checkpointer.client.readEvents(stream, { limit: 1000 });
      const deltas = events.filter((e) => e.type === 'hefesto.delta');
      expect(
        events.filter((e) => e.type === 'hefesto.writes'),
        durability,
      ).toEqual([]);
      expect(deltas.slice(1).every((e) => 'leaves' in (e.payload as object))).toBe(true);
      expect(deltas.slice(2).every((e) => 'pendingWrites' in (e.payload as object))).toBe(true);
    }
  });
});
