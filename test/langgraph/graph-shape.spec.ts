import { Command, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import {
  copyThread,
  graphShapeOf,
  HefestoSaver,
  MAX_GRAPH_NODES,
} from '../../packages/langgraph/src/index.js';
import { refundGraph, refundInput } from '../support/refund-graph.js';
import { type Backend, memory, ROOT } from './backends.js';

/**
 * The graph-shape opt-in (packages/langgraph/src/graph-shape.ts): `saver.recordGraph(graph)`
 * keeps the compiled graph's nodes and edges in each checkpoint's state at `/graph`, written
 * by the first put only; a saver that did not opt in keeps it, a copy carries it, and a graph
 * too large to record is refused when it opts in.
 */

const REFUND_SHAPE = {
  v: 1,
  nodes: ['__start__', 'agent', 'approve', 'refund', 'reply', '__end__'],
  edges: [
    { source: '__start__', target: 'agent' },
    { source: 'agent', target: 'approve' },
    { source: 'approve', target: 'refund' },
    { source: 'refund', target: 'reply' },
    { source: 'reply', target: '__end__' },
  ],
};

describe('the graph-shape opt-in', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await memory.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const client = () => new HefestoClient({ baseUrl: backend.url, apiKey: ROOT });
  const saver = () => new HefestoSaver({ client: client(), prefix: 'gs' });
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });

  it('reads nodes and edges from getGraph(), conditional edges marked', () => {
    expect(graphShapeOf(refundGraph(saver()))).toEqual(REFUND_SHAPE);
    const routed = new StateGraph(MessagesAnnotation)
      .addNode('agent', () => ({}))
      .addNode('tools', () => ({}))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', () => END, ['tools', END])
      .addEdge('tools', 'agent')
      .compile();
    const shape = graphShapeOf(routed);
    expect(shape.nodes).toEqual(['__start__', 'agent', 'tools', '__end__']);
    const sorted = (es: unknown[]) => es.map((e) => JSON.stringify(e)).sort();
    expect(sorted(shape.edges)).toEqual(
      sorted([
        { source: '__start__', target: 'agent' },
        { source: 'agent', target: 'tools', conditional: true },
        { source: 'agent', target: '__end__', conditional: true },
        { source: 'tools', target: 'agent' },
      ]),
    );
  });

  it('records the shape on every checkpoint of a thread, writing it once; without the opt-in nothing', async () => {
    const s = saver();
    const graph = refundGraph(s);
    expect(s.recordGraph(graph)).toBe(s);
    await graph.invoke(refundInput(), cfg('rec'));
    const c = client();
    const { checkpoints } = await c.listCheckpoints('gs.rec.', { limit: 100 });
    expect(checkpoints.length).toBe(3);
    for (const { label } of checkpoints)
      expect((await c.getCheckpointTuple('gs.rec.', { label })).state.graph).toEqual(REFUND_SHAPE);
    const { events } = await c.readEvents('gs.rec.', { type: 'hefesto.delta', limit: 100 });
    const graphOps = events.flatMap((e) =>
      (e.payload as { ops: Array<{ path: string }> }).ops.filter((o) =>
        o.path.startsWith('/graph'),
      ),
    );
    expect(graphOps).toHaveLength(1);

    await refundGraph(saver()).invoke(refundInput(), cfg('plain'));
    expect((await c.getCheckpointTuple('gs.plain.')).state.graph).toBeUndefined();
  });

  it('is kept by a saver that did not opt in, and by a copy', async () => {
    const s = saver();
    const graph = refundGraph(s);
    s.recordGraph(graph);
    await graph.invoke(refundInput(), cfg('kept'));
    // Another worker, without the opt-in, finishes the run.
    const out = await refundGraph(saver()).invoke(new Command({ resume: 'yes' }), cfg('kept'));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    const c = client();
    expect((await c.getCheckpointTuple('gs.kept.')).state.graph).toEqual(REFUND_SHAPE);
    await copyThread(saver(), { threadId: 'kept', newThreadId: 'kept-copy' });
    expect((await c.getCheckpointTuple('gs.kept-copy.')).state.graph).toEqual(REFUND_SHAPE);
  });

  it('refuses a graph too large to record when it opts in', () => {
    const nodes = Object.fromEntries(
      Array.from({ length: MAX_GRAPH_NODES + 1 }, (_, i) => [`n${i}`, { id: `n${i}` }]),
    );
    expect(() => saver().recordGraph({ getGraph: () => ({ nodes, edges: [] }) })).toThrow(
      /too large to record/,
    );
  });
});
