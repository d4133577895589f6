import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HefestoSaver,
  StaleThreadError,
  ThreadFencedError,
} from '../../packages/langgraph/src/index.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * Two workers on one thread, with real StateGraphs: by default the stale one's write is
 * refused instead of forking the thread; with `exclusive: true` the second worker is refused
 * before its graph runs anything, and a drained worker hands the thread over.
 */

/** A one-node graph whose node waits on `gate` (when set) and counts its runs. */
const worker = (saver: HefestoSaver, name: string) => {
  const w = { runs: 0, gate: undefined as Promise<void> | undefined, entered: () => {} };
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('model', async (state) => {
      w.runs++;
      w.entered();
      if (w.gate) await w.gate;
      return { messages: [new AIMessage(`${name} answers ${state.messages.length}`)] };
    })
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer: saver });
  // `sync`: each checkpoint is stored before the next step runs, so "inside the node" means
  // the thread's head is the input checkpoint (the interleavings below rely on it).
  const invoke = (thread: string, text: string) =>
    graph.invoke(
      { messages: [new HumanMessage(text)] },
      { configurable: { thread_id: thread }, durability: 'sync' },
    );
  /** Starts an invoke that parks inside the node until the returned `open` is called. */
  const parked = (thread: string, text: string) => {
    let open = () => {};
    w.gate = new Promise<void>((r) => {
      open = r;
    });
    const inside = new Promise<void>((r) => {
      w.entered = r;
    });
    const run = invoke(thread, text);
    run.catch(() => {});
    return {
      run,
      inside,
      open: () => {
        w.gate = undefined;
        w.entered = () => {};
        open();
      },
    };
  };
  return Object.assign(w, { saver, graph, invoke, parked });
};

const texts = (state: { messages: Array<{ content: unknown }> }) =>
  state.messages.map((m) => String(m.content));

describe.each(backends.filter((b) => b.available))('two workers one thread on $name', (kind) => {
  let backend: Backend;
  let n = 0;
  const saver = (prefix: string, more: Partial<ConstructorParameters<typeof HefestoSaver>[0]>) =>
    new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix, ...more });
  beforeAll(async () => {
    backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });

  it('default: the stale worker’s invoke fails (StaleThreadError) and the thread does not fork', async () => {
    const prefix = `stale${++n}`;
    const a = worker(saver(prefix, {}), 'a');
    const b = worker(saver(prefix, {}), 'b');
    await a.invoke('t', 'hello');
    const slow = a.parked('t', 'from a'); // a reads the head, then waits inside its node
    await slow.inside;
    await b.invoke('t', 'from b'); // b moves the head meanwhile
    slow.open();
    await expect(slow.run).rejects.toBeInstanceOf(StaleThreadError);
    const state = await b.graph.getState({ configurable: { thread_id: 't' } });
    // a's input checkpoint landed before b read; a's answer was refused, not forked in.
    expect(texts(state.values)).toEqual([
      'hello',
      'a answers 1',
      'from a',
      'from b',
      'b answers 4',
    ]);
    const history = [];
    for await (const s of b.graph.getStateHistory({ configurable: { thread_id: 't' } })) {
      history.push(s);
    }
    // One line of checkpoints: each one's parent is the next older one.
    for (let i = 0; i + 1 < history.length; i++) {
      expect(history[i]?.parentConfig?.configurable?.checkpoint_id).toBe(
        history[i + 1]?.config.configurable?.checkpoint_id,
      );
    }
  });

  it('exclusive: a second worker is refused with ErrFenced before its graph runs anything', async () => {
    const prefix = `excl${++n}`;
    const a = worker(saver(prefix, { exclusive: true }), 'a');
    const b = worker(saver(prefix, { exclusive: true }), 'b');
    const plain = worker(saver(prefix, {}), 'p');
    const slow = a.parked('t', 'from a');
    await slow.inside;
    const refused = await b.invoke('t', 'from b').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ThreadFencedError);
    expect((refused as ThreadFencedError).code).toBe('ErrFenced');
    expect(b.runs).toBe(0);
    // A worker without the lease is refused by the server (no token while it is held).
    await expect(plain.invoke('t', 'from p')).rejects.toMatchObject({ code: 'ErrFenced' });
    slow.open();
    await slow.run;
    // Other threads stay free for b.
    await b.invoke('other', 'hi');
    expect(b.runs).toBe(1);
    const state = await a.graph.getState({ configurable: { thread_id: 't' } });
    expect(texts(state.values)).toEqual(['from a', 'a answers 1']);
    await Promise.all([a.saver.release(), b.saver.release()]);
  });

  it('exclusive: a drained worker hands the thread over; its later writes are fenced', async () => {
    const prefix = `hand${++n}`;
    const sa = saver(prefix, { exclusive: true });
    const a = worker(sa, 'a');
    const b = worker(saver(prefix, { exclusive: true }), 'b');
    await a.invoke('t', 'one');
    await expect(b.invoke('t', 'two')).rejects.toBeInstanceOf(ThreadFencedError);
    await sa.handOver('t');
    await b.invoke('t', 'two');
    const state = await b.graph.getState({ configurable: { thread_id: 't' } });
    expect(texts(state.values)).toEqual(['one', 'a answers 1', 'two', 'b answers 3']);
    // a lost the thread: its next invoke is refused before its node runs.
    const runs = a.runs;
    await expect(a.invoke('t', 'three')).rejects.toBeInstanceOf(ThreadFencedError);
    expect(a.runs).toBe(runs);
    await b.saver.release();
    await a.invoke('t', 'three'); // released: free again
    expect(texts((await a.graph.getState({ configurable: { thread_id: 't' } })).values)).toEqual([
      'one',
      'a answers 1',
      'two',
      'b answers 3',
      'three',
      'a answers 5',
    ]);
    await sa.release();
  });

  it('exclusive: a restarted worker (same owner) takes over; the old one’s write is fenced', async () => {
    const prefix = `restart${++n}`;
    const old = worker(saver(prefix, { exclusive: true, lease: { owner: 'pod-1' } }), 'old');
    const slow = old.parked('t', 'from old');
    await slow.inside;
    const next = worker(saver(prefix, { exclusive: true, lease: { owner: 'pod-1' } }), 'new');
    // The new process reads the thread (taking the lease: epoch + 1) before it writes.
    await next.saver.getTuple({ configurable: { thread_id: 't' } });
    slow.open();
    await expect(slow.run).rejects.toMatchObject({ code: 'ErrFenced' });
    // Its task writes are fenced too: nothing of it lands on the checkpoint `next` runs from.
    const head = await next.saver.getTuple({ configurable: { thread_id: 't' } });
    await expect(
      old.saver.putWrites(head?.config ?? {}, [['messages', 'late']], 'stale-task'),
    ).rejects.toMatchObject({ code: 'ErrFenced' });
    await next.invoke('t', 'from new');
    const state = await next.graph.getState({ configurable: { thread_id: 't' } });
    expect(texts(state.values)).toEqual(['from old', 'from new', 'new answers 2']);
    await next.saver.release();
  });
});
