import { Annotation, END, MemorySaver, START, StateGraph } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { HefestoClient } from '../../shared/client/client.js';
import { type Backend, backends, memory, ROOT } from './backends.js';

/**
 * Issue 31: one thread across two versions of a graph. Version 2 adds a channel (`count`) and
 * drops one (`note`); LangGraph itself decides what a channel missing from a checkpoint, or a
 * checkpoint value no channel reads, becomes. HefestoSaver must answer what MemorySaver (the
 * framework's own reference) answers: a differential test over the same steps.
 */

const V1 = Annotation.Root({
  items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  note: Annotation<string>(),
});
const V2 = Annotation.Root({
  items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});

const graphV1 = (saver: BaseCheckpointSaver) =>
  new StateGraph(V1)
    .addNode('step', (s: typeof V1.State) => ({ items: [`v1-${s.items.length}`], note: 'seen' }))
    .addEdge(START, 'step')
    .addEdge('step', END)
    .compile({ checkpointer: saver });

const graphV2 = (saver: BaseCheckpointSaver) =>
  new StateGraph(V2)
    .addNode('step', (s: typeof V2.State) => ({ items: [`v2-${s.items.length}`], count: 1 }))
    .addEdge(START, 'step')
    .addEdge('step', END)
    .compile({ checkpointer: saver });

/** Two turns of version 1, then two of version 2, on one thread; what each step answers. */
const acrossVersions = async (saver: () => BaseCheckpointSaver) => {
  const thread = { configurable: { thread_id: 'versions' } };
  const seen: unknown[] = [];
  seen.push(await graphV1(saver()).invoke({ items: ['a'] }, thread));
  seen.push(await graphV1(saver()).invoke({ items: ['b'] }, thread));
  seen.push((await graphV2(saver()).getState(thread)).values);
  seen.push(await graphV2(saver()).invoke({ items: ['c'] }, thread));
  seen.push(await graphV2(saver()).invoke({ items: ['d'], count: 5 }, thread));
  // Back to version 1 (a rollback deploy): the channel it lost and the one it never had.
  seen.push(await graphV1(saver()).invoke({ items: ['e'] }, thread));
  seen.push((await graphV2(saver()).getState(thread)).values);
  return seen;
};

describe.each([memory, ...backends].filter((b) => b.available))(
  'HefestoSaver across two graph versions, on $name',
  (kind) => {
    let backend: Backend;
    beforeAll(async () => {
      backend = await kind.start();
    });
    afterAll(async () => {
      await backend?.stop();
    });

    it('answers what MemorySaver answers when a channel is added and another removed', async () => {
      const memory = new MemorySaver();
      const expected = await acrossVersions(() => memory);
      const client = new HefestoClient({ baseUrl: backend.url, apiKey: ROOT });
      // A new saver for every step: each deploy is a new worker, nothing cached between them.
      const got = await acrossVersions(() => new HefestoSaver({ client, prefix: 'versions' }));
      expect(got).toEqual(expected);
      // What that is (LangGraph's rule): an added channel starts at its default; a channel the
      // running graph does not have keeps its value in the checkpoint, for a graph that has it.
      expect(expected[2]).toEqual({ items: ['a', 'v1-1', 'b', 'v1-3'], count: 0 });
      expect(expected[4]).toMatchObject({ count: 7 });
      expect(expected[5]).toMatchObject({ note: 'seen' });
      expect(expected[6]).toMatchObject({ count: 7 });
    });
  },
);
