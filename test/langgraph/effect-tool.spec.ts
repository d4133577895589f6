import { AIMessage, HumanMessage, type ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effectTool, HefestoSaver } from '../../packages/langgraph/src/index.js';
import { type Backend, backends, ROOT } from './backends.js';

/**
 * A tool wrapped with effectTool runs its side effect once per call, while LangGraph runs
 * the step that calls it again: a RetryPolicy retry, a resume after a failed invoke (on a
 * new saver, as a restarted process would), a replay from an older checkpoint. Each case
 * runs the same graph with an unwrapped tool too, which repeats the side effect: the
 * scenario is one that does repeat it.
 */

describe.each(backends.filter((b) => b.available))('effectTool on $name', (kind) => {
  let backend: Backend;
  let n = 0;
  const saver = (prefix: string) =>
    new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix });
  beforeAll(async () => {
    backend = await kind.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });

  /** A node that charges, then fails `crashes` times after the charge (before its writes). */
  const chargingGraph = (s: HefestoSaver, wrapped: boolean, crashes: number, retries: number) => {
    const charges: number[] = [];
    const body = async ({ cents }: { cents: number }) => {
      charges.push(cents);
      return { receipt: `r-${charges.length}`, cents };
    };
    const charge = wrapped
      ? effectTool(s, 'charge', body)
      : (args: { cents: number }) => body(args);
    let left = crashes;
    const graph = new StateGraph(MessagesAnnotation)
      .addNode(
        'act',
        async (state, config) => {
          const r = await charge({ cents: state.messages.length * 100 }, config);
          if (left-- > 0) throw new Error('crashed after the charge');
          return { messages: [new AIMessage(`charged ${r.cents}: ${r.receipt}`)] };
        },
        { retryPolicy: { maxAttempts: retries, initialInterval: 0.001, jitter: false } },
      )
      .addEdge(START, 'act')
      .addEdge('act', END)
      .compile({ checkpointer: s });
    return { graph, charges };
  };

  it('a step retried by its RetryPolicy charges once', async () => {
    const prefix = `retry${++n}`;
    const config = { configurable: { thread_id: 't' } };
    const plain = chargingGraph(saver(`${prefix}p`), false, 2, 3);
    await plain.graph.invoke({ messages: [new HumanMessage('pay')] }, config);
    expect(plain.charges).toEqual([100, 100, 100]);
    const once = chargingGraph(saver(prefix), true, 2, 3);
    const out = await once.graph.invoke({ messages: [new HumanMessage('pay')] }, config);
    expect(once.charges).toEqual([100]);
    expect(out.messages.at(-1)?.content).toBe('charged 100: r-1');
  });

  it('a step resumed after a failed invoke, by another saver, charges once', async () => {
    const prefix = `resume${++n}`;
    const config = { configurable: { thread_id: 't' } };
    const first = chargingGraph(saver(prefix), true, 1, 1);
    await expect(
      first.graph.invoke({ messages: [new HumanMessage('pay')] }, config),
    ).rejects.toThrow(/crashed after the charge/);
    expect(first.charges).toEqual([100]);
    const second = chargingGraph(saver(prefix), true, 0, 1); // a restarted process
    const out = await second.graph.invoke(null, config);
    expect(second.charges).toEqual([]);
    expect(out.messages.at(-1)?.content).toBe('charged 100: r-1');
    // Control: unwrapped, the same resume charges again.
    const plain = chargingGraph(saver(`${prefix}p`), false, 1, 1);
    await expect(
      plain.graph.invoke({ messages: [new HumanMessage('pay')] }, config),
    ).rejects.toThrow();
    const plainAgain = chargingGraph(saver(`${prefix}p`), false, 0, 1);
    await plainAgain.graph.invoke(null, config);
    expect([...plain.charges, ...plainAgain.charges]).toEqual([100, 100]);
  });

  it('a ToolNode call replayed from an older checkpoint answers the stored result', async () => {
    const s = saver(`tools${++n}`);
    const sent: string[] = [];
    let calls = 0; // how often LangGraph ran the tool (the wrapper), vs `sent`: the effect
    const wrapped = effectTool(s, 'send_email', async ({ to }: { to: string }, { effectKey }) => {
      sent.push(to);
      return `sent to ${to} (${effectKey.slice(0, 6)}…)`;
    });
    const sendEmail = tool(
      (args: { to: string }, config) => {
        calls++;
        return wrapped(args, config);
      },
      { name: 'send_email', description: 'Sends an email', schema: z.object({ to: z.string() }) },
    );
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('model', () => ({
        messages: [
          new AIMessage({
            content: '',
            tool_calls: [{ id: 'call_1', name: 'send_email', args: { to: 'ana@example.com' } }],
          }),
        ],
      }))
      .addNode('tools', new ToolNode([sendEmail]))
      .addEdge(START, 'model')
      .addEdge('model', 'tools')
      .addEdge('tools', END)
      .compile({ checkpointer: s });
    const config = { configurable: { thread_id: 't' } };
    const out = await graph.invoke({ messages: [new HumanMessage('mail ana')] }, config);
    const reply = out.messages.at(-1) as ToolMessage;
    expect(sent).toEqual(['ana@example.com']);
    // Replay the tools step from the checkpoint before it (time travel).
    let before: typeof config | undefined;
    for await (const snap of graph.getStateHistory(config)) {
      if (snap.next.includes('tools')) before = snap.config as typeof config;
    }
    expect(before).toBeDefined();
    const replayed = await graph.invoke(null, before);
    expect(calls).toBe(2);
    expect(sent).toEqual(['ana@example.com']);
    expect((replayed.messages.at(-1) as ToolMessage).content).toBe(reply.content);
  });
});
