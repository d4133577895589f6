import { Command } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import {
  copyThread,
  HefestoSaver,
  pendingResume,
  RESUME_EVENT,
  requestResume,
} from '../../packages/langgraph/src/index.js';
import { REFUND_QUESTION, refundGraph, refundInput } from '../support/refund-graph.js';
import { type Backend, embedded, ROOT } from './backends.js';

/**
 * copyThread (packages/langgraph/src/copy-thread.ts) and resume requests
 * (resume-requests.ts) with a real graph: a copy is a thread HefestoSaver resumes, an
 * interrupt pending in the source is pending in the copy, and a recorded resume value is
 * picked up by a worker.
 */

describe('copyThread and resume requests', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await embedded.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const saver = (prefix: string) =>
    new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix });
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });
  const texts = (s: { values: { messages: Array<{ content: unknown }> } }) =>
    s.values.messages.map((m) => m.content);

  it('copies an interrupted thread into one a new worker resumes; the source stays interrupted', async () => {
    const s = saver('cp1');
    const g = refundGraph(s);
    await g.invoke(refundInput(), cfg('src'));
    const interrupted = await g.getState(cfg('src'));
    expect(interrupted.next).toEqual(['approve']);

    const { checkpoints, streamId } = await copyThread(s, { threadId: 'src', newThreadId: 'copy' });
    expect(checkpoints).toBe(3);
    expect(streamId).toBe('cp1.copy.');

    // Another worker (a saver with nothing cached) resumes the copy.
    const worker = refundGraph(saver('cp1'));
    const copied = await worker.getState(cfg('copy'));
    expect(copied.next).toEqual(['approve']);
    expect(copied.tasks[0]?.interrupts[0]?.value).toEqual(REFUND_QUESTION);
    expect(copied.config.configurable?.checkpoint_id).toBe(
      interrupted.config.configurable?.checkpoint_id,
    );
    const done = await worker.invoke(new Command({ resume: 'yes' }), cfg('copy'));
    expect(done.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect((await worker.getState(cfg('src'))).next).toEqual(['approve']);
    // The copy's history lists under its own thread id, parents and all.
    const listed = [];
    for await (const t of s.list(cfg('copy'))) listed.push(t.config.configurable?.thread_id);
    expect(listed).toHaveLength(6);
    expect(new Set(listed)).toEqual(new Set(['copy']));
    const head = (
      await new HefestoClient({ baseUrl: backend.url, apiKey: ROOT }).getState(streamId)
    ).state as { thread: string };
    expect(head.thread).toBe('copy');
  });

  it('forks at an earlier checkpoint with its recorded writes; an edit there takes the other path', async () => {
    const s = saver('cp2');
    const g = refundGraph(s);
    await g.invoke(refundInput(), cfg('src'));
    await g.invoke(new Command({ resume: 'no' }), cfg('src'));
    const history = [];
    for await (const h of g.getStateHistory(cfg('src'))) history.push(h);
    const afterAgent = history.find((h) => h.next[0] === 'approve' && h.metadata?.step === 1);
    expect(afterAgent).toBeDefined();

    await copyThread(s, {
      threadId: 'src',
      checkpointId: afterAgent?.config.configurable?.checkpoint_id,
      newThreadId: 'retry',
    });
    const worker = refundGraph(saver('cp2'));
    // The copy holds the checkpoint's pending writes: approve's decision is recorded there, so
    // running on replays it, as LangGraph's own time travel does.
    const replayed = await worker.invoke(null, cfg('retry'));
    expect(replayed.messages.at(-1)?.content).toBe('No refund made.');
    // A second fork, edited as the approver would have decided: the other ending.
    await copyThread(s, {
      threadId: 'src',
      checkpointId: afterAgent?.config.configurable?.checkpoint_id,
      newThreadId: 'edited',
    });
    await worker.updateState(cfg('edited'), { approved: true }, 'approve');
    const out = await worker.invoke(null, cfg('edited'));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect(texts(await g.getState(cfg('src'))).at(-1)).toBe('No refund made.');
  });

  it('refuses to copy into a thread that exists, writing nothing to it', async () => {
    const s = saver('cp3');
    const g = refundGraph(s);
    await g.invoke(refundInput(), cfg('a'));
    await g.invoke(refundInput(), cfg('b'));
    const before = await g.getState(cfg('b'));
    await expect(copyThread(s, { threadId: 'a', newThreadId: 'b' })).rejects.toThrow(
      /exists with a history of its own/,
    );
    expect((await g.getState(cfg('b'))).config).toEqual(before.config);
    await expect(copyThread(s, { threadId: 'none', newThreadId: 'c' })).rejects.toThrow();
  });

  it('records a resume on a thread whose worker holds its exclusive lease; that worker picks it up', async () => {
    // The worker holds the thread (ErrFenced for any write without its epoch); the console (a
    // saver or client of its own, no lease) records the resume all the same.
    const ws = new HefestoSaver({
      baseUrl: backend.url,
      apiKey: ROOT,
      prefix: 'rs2',
      exclusive: true,
    });
    const worker = refundGraph(ws);
    await worker.invoke(refundInput(), cfg('t'));
    const id = (await worker.getState(cfg('t'))).config.configurable?.checkpoint_id as string;
    await requestResume(saver('rs2'), 't', id, 'yes');
    const asked = await pendingResume(ws, 't');
    expect(asked).toMatchObject({ checkpointId: id, value: 'yes' });
    const out = await worker.invoke(new Command({ resume: asked?.value }), cfg('t'));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect(await pendingResume(ws, 't')).toBeUndefined();
    // The request side stream is the thread's: it goes with the thread.
    await ws.deleteThread('t');
    const client = new HefestoClient({ baseUrl: backend.url, apiKey: ROOT });
    expect((await client.listStreams({ prefix: 'rs2.t.' })).streams).toEqual([]);
  });

  it('still finds a resume an earlier release recorded on the thread stream itself', async () => {
    const s = saver('rs3');
    const g = refundGraph(s);
    await g.invoke(refundInput(), cfg('t'));
    const id = (await g.getState(cfg('t'))).config.configurable?.checkpoint_id as string;
    // What requestResume wrote before resume streams: the event on the thread's own stream.
    await s.client.append(s.streamIdOf('t', ''), [
      { type: RESUME_EVENT, payload: { checkpointId: id, value: 'yes' } },
    ]);
    const asked = await pendingResume(saver('rs3'), 't');
    expect(asked).toMatchObject({ checkpointId: id, value: 'yes' });
    const out = await g.invoke(new Command({ resume: asked?.value }), cfg('t'));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect(await pendingResume(s, 't')).toBeUndefined();
  });

  it('records a resume value that a worker picks up and runs; then none is pending', async () => {
    const s = saver('rs1');
    const g = refundGraph(s);
    await g.invoke(refundInput(), cfg('t'));
    expect(await pendingResume(s, 't')).toBeUndefined();
    const state = await g.getState(cfg('t'));
    const id = state.config.configurable?.checkpoint_id as string;
    // A request for another checkpoint (stale) is not pending; the newest one for this one is.
    await requestResume(s, 't', 'not-the-head', 'no');
    await requestResume(s, 't', id, 'no');
    await requestResume(s, 't', id, 'yes');

    // The worker: a saver of its own, polling.
    const ws = saver('rs1');
    const worker = refundGraph(ws);
    const asked = await pendingResume(ws, 't');
    expect(asked).toMatchObject({ checkpointId: id, value: 'yes' });
    const out = await worker.invoke(new Command({ resume: asked?.value }), cfg('t'));
    expect(out.messages.at(-1)?.content).toBe('Done: 5 EUR are on their way.');
    expect(await pendingResume(ws, 't')).toBeUndefined();
  });
});
