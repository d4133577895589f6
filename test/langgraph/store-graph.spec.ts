import { Annotation, END, InMemoryStore, START, StateGraph } from '@langchain/langgraph';
import type { BaseStore } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoSaver, HefestoStore } from '../../packages/langgraph/src/index.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * HefestoStore as a graph's store, beside HefestoSaver: a node reads the memories earlier
 * runs wrote (`config.store.search`) and writes one (`put`); the same graph on InMemoryStore
 * gives the same replies, and a new store (another worker) reads every memory back. On the
 * embedded server and the AWS emulators.
 */

const graphOf = (store: BaseStore, checkpointer?: HefestoSaver) =>
  new StateGraph(Annotation.Root({ reply: Annotation<string> }))
    .addNode('remember', async (_, config) => {
      const user = config.configurable?.user as string;
      const memories = config.store as BaseStore;
      const seen = await memories.search(['users', user, 'visits'], { filter: { kept: true } });
      await memories.put(['users', user, 'visits'], `v${seen.length}`, {
        kept: true,
        n: seen.length,
      });
      await memories.put(['users', user, 'notes'], 'last', { text: `visit ${seen.length}` });
      const last = await memories.get(['users', user, 'notes'], 'last');
      return { reply: `${user}: ${seen.map((i) => i.key).join(',')} | ${last?.value.text}` };
    })
    .addEdge(START, 'remember')
    .addEdge('remember', END)
    .compile({ store, ...(checkpointer ? { checkpointer } : {}) });

describe.each(backends)('a StateGraph with HefestoStore ($name)', (kind) => {
  let backend: Backend;
  beforeAll(async () => {
    if (kind.available) backend = await kind.start();
  });
  afterAll(async () => backend?.stop());

  it.skipIf(!kind.available)('reads what earlier runs wrote, as with InMemoryStore', async () => {
    const options = { baseUrl: backend.url, apiKey: ROOT, prefix: `g${Date.now()}` };
    const ours = graphOf(new HefestoStore(options), new HefestoSaver(options));
    const theirs = graphOf(new InMemoryStore());
    for (const [i, user] of ['ana', 'bo', 'ana', 'ana', 'bo'].entries()) {
      const config = { configurable: { thread_id: `t${i}`, user } };
      const expected = await theirs.invoke({}, config);
      expect(await ours.invoke({}, config)).toEqual(expected);
    }
    const other = new HefestoStore(options);
    expect((await other.search(['users', 'ana', 'visits'])).map((i) => i.key)).toEqual([
      'v0',
      'v1',
      'v2',
    ]);
    expect(await other.listNamespaces({ prefix: ['users'], maxDepth: 2 })).toEqual([
      ['users', 'ana'],
      ['users', 'bo'],
    ]);
  });
});
