import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChannelSchema, HefestoSaver } from '../../packages/langgraph/src/index.js';
import { HefestoClient } from '../../shared/client/client.js';
import { SchemaTooNewError, UpcasterMissingError } from '../../shared/client/errors.js';
import { type Backend, backends, memory, ROOT } from './backends.js';

/**
 * Issue 31: HefestoSaver's upcaster hook (packages/langgraph/src/channel-schema.ts). Version 1
 * of a graph keeps `notes` as strings; version 2 as `{ text }` objects, with an upcaster for
 * the channel. A thread written by version 1 reads back, and goes on, in version 2's shape; a
 * version-1 saver is refused once version 2 wrote; a missing step is named.
 */

type Note = { text: string };
const V1 = Annotation.Root({
  notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});
const V2 = Annotation.Root({
  notes: Annotation<Note[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});
const v2Schema: ChannelSchema = {
  version: 2,
  channels: { notes: { 1: (notes) => (notes as string[]).map((text) => ({ text })) } },
};

const graphV1 = (saver: BaseCheckpointSaver) =>
  new StateGraph(V1)
    .addNode('step', (s: typeof V1.State) => ({ notes: [`n${s.turns}`], turns: 1 }))
    .addEdge(START, 'step')
    .addEdge('step', END)
    .compile({ checkpointer: saver });
const graphV2 = (saver: BaseCheckpointSaver) =>
  new StateGraph(V2)
    .addNode('step', (s: typeof V2.State) => ({
      notes: [{ text: `n${s.turns} of ${s.notes.length}` }],
      turns: 1,
    }))
    .addEdge(START, 'step')
    .addEdge('step', END)
    .compile({ checkpointer: saver });

describe.each([memory, ...backends].filter((b) => b.available))(
  'HefestoSaver channel upcasters, on $name',
  (kind) => {
    let backend: Backend;
    let client: HefestoClient;
    beforeAll(async () => {
      backend = await kind.start();
      client = new HefestoClient({ baseUrl: backend.url, apiKey: ROOT });
    });
    afterAll(async () => {
      await backend?.stop();
    });
    const saver = (schema?: ChannelSchema) =>
      new HefestoSaver({ client, prefix: 'schema', ...(schema ? { schema } : {}) });

    it('reads a version-1 thread in version 2 shape, goes on in it, and refuses version 1 after', async () => {
      const thread = { configurable: { thread_id: 'notes' } };
      await graphV1(saver()).invoke({ notes: ['a'] }, thread);
      await graphV1(saver()).invoke({ notes: ['b'] }, thread);
      const old = await graphV1(saver()).getState(thread);
      expect(old.values).toEqual({ notes: ['a', 'n0', 'b', 'n1'], turns: 2 });

      const read = await graphV2(saver(v2Schema)).getState(thread);
      expect(read.values).toEqual({
        notes: [{ text: 'a' }, { text: 'n0' }, { text: 'b' }, { text: 'n1' }],
        turns: 2,
      });
      await graphV2(saver(v2Schema)).invoke({ notes: [{ text: 'c' }] }, thread);
      // A new worker (nothing cached) reads every channel in the new shape from the server.
      const now = await graphV2(saver(v2Schema)).getState(thread);
      expect(now.values.notes).toEqual([
        { text: 'a' },
        { text: 'n0' },
        { text: 'b' },
        { text: 'n1' },
        { text: 'c' },
        { text: 'n2 of 5' },
      ]);
      // The version is on the chain: the last delta records it.
      const stream = saver().streamIdOf('notes');
      const head = await client.getStream(stream);
      const [last] = (await client.readEvents(stream, { from: head.stateSeq, limit: 1 })).events;
      expect(last?.payload).toMatchObject({ schema: 2 });
      expect((await client.verify(stream)).ok).toBe(true);
      // An older checkpoint of the thread (time travel) still reads in the new shape.
      const history = [];
      for await (const s of graphV2(saver(v2Schema)).getStateHistory(thread)) history.push(s);
      const first = history.at(-2);
      expect(first?.values.notes?.every((n: Note) => typeof n.text === 'string')).toBe(true);
      // A version-1 saver is refused, naming both versions.
      const refused = await graphV1(saver())
        .getState(thread)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SchemaTooNewError);
      expect(refused).toMatchObject({ streamVersion: 2, workerVersion: 1 });
    });

    it('upcasts the pending writes a version-1 task left across the deploy, and refuses a newer write', async () => {
      // Version 1 runs two tasks at once: `a` finishes (its write kept as a pending write of
      // the checkpoint), `b` fails; version 2 resumes the thread and runs only `b`.
      const parallelV1 = (saver: BaseCheckpointSaver) =>
        new StateGraph(V1)
          .addNode('a', () => ({ notes: ['from a'], turns: 1 }))
          .addNode('b', (): typeof V1.Update => {
            throw new Error('b fails at version 1');
          })
          .addEdge(START, 'a')
          .addEdge(START, 'b')
          .addEdge('a', END)
          .addEdge('b', END)
          .compile({ checkpointer: saver });
      const parallelV2 = (saver: BaseCheckpointSaver) =>
        new StateGraph(V2)
          .addNode('a', () => ({ notes: [{ text: 'a again' }], turns: 1 }))
          .addNode('b', () => ({ notes: [{ text: 'from b' }], turns: 1 }))
          .addEdge(START, 'a')
          .addEdge(START, 'b')
          .addEdge('a', END)
          .addEdge('b', END)
          .compile({ checkpointer: saver });
      const thread = { configurable: { thread_id: 'pending' } };
      await expect(parallelV1(saver()).invoke({ notes: ['start'] }, thread)).rejects.toThrow(
        'b fails at version 1',
      );
      const left = await saver().getTuple(thread);
      expect(left?.pendingWrites).toContainEqual([expect.any(String), 'notes', ['from a']]);

      // Read at version 2, the write is in version 2's shape; resumed, `a` is not run again.
      const read = await saver(v2Schema).getTuple(thread);
      expect(read?.pendingWrites).toContainEqual([
        expect.any(String),
        'notes',
        [{ text: 'from a' }],
      ]);
      const done = await parallelV2(saver(v2Schema)).invoke(null, thread);
      expect(done.notes).toEqual([{ text: 'start' }, { text: 'from a' }, { text: 'from b' }]);
      expect(done.turns).toBe(2);

      // A version-2 write to a checkpoint a version-1 saver still reads is refused there.
      const other = { configurable: { thread_id: 'pending-newer' } };
      await graphV1(saver()).invoke({ notes: ['x'] }, other);
      const tip = await saver().getTuple(other);
      await saver(v2Schema).putWrites(tip?.config ?? other, [['notes', [{ text: 'y' }]]], 'task-2');
      const refused = await saver()
        .getTuple(other)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SchemaTooNewError);
      expect(refused).toMatchObject({ streamVersion: 2, workerVersion: 1 });
    });

    it('answers a DeltaChannel history whose seed and writes a version-1 saver wrote, upcast', async () => {
      const thread = { configurable: { thread_id: 'seeded' } };
      await graphV1(saver()).invoke({ notes: ['a'] }, thread);
      const tip = await saver().getTuple(thread);
      const config = tip?.config ?? thread;

      const old = await saver().getDeltaChannelHistory({ config, channels: ['notes'] });
      const now = await saver(v2Schema).getDeltaChannelHistory({ config, channels: ['notes'] });

      const seed = old.notes?.seed as string[];
      expect(seed.length).toBeGreaterThan(0);
      expect(old.notes?.writes.length).toBeGreaterThan(0);
      expect(now.notes?.seed).toEqual(seed.map((text) => ({ text })));
      expect(now.notes?.writes).toEqual(
        (old.notes?.writes ?? []).map(([task, ch, v]) => [
          task,
          ch,
          (v as string[]).map((text) => ({ text })),
        ]),
      );
    });

    it('names the step a channel lacks', async () => {
      const thread = { configurable: { thread_id: 'lacking' } };
      await graphV1(saver()).invoke({ notes: ['a'] }, thread);
      const v3: ChannelSchema = { version: 3, channels: { notes: { 2: (n) => n } } };
      const err = await graphV2(saver(v3))
        .getState(thread)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpcasterMissingError);
      expect(err).toMatchObject({ missing: 1, workerVersion: 3 });
    });
  },
);
