import { type AgentInputItem, protocol } from '@openai/agents-core';
import fc from 'fast-check';

/** Arbitraries of the OpenAI Agents SDK's history item shapes (each a protocol.ModelItem). */

const text = fc.string({ maxLength: 12 });
const callId = fc.constantFrom('call_1', 'call_2', 'call_3');

export const itemArb: fc.Arbitrary<AgentInputItem> = fc.oneof(
  text.map((content) => ({ type: 'message', role: 'user', content }) as AgentInputItem),
  text.map(
    (t) =>
      ({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: t }],
      }) as AgentInputItem,
  ),
  text.map((content) => ({ type: 'message', role: 'system', content }) as AgentInputItem),
  fc.record({ t: text, id: fc.option(fc.constantFrom('msg_1', 'msg_2'), { nil: undefined }) }).map(
    ({ t, id }) =>
      ({
        ...(id ? { id } : {}),
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: t }],
      }) as AgentInputItem,
  ),
  fc.record({ callId, name: fc.constantFrom('weather', 'search'), args: text }).map(
    ({ callId, name, args }) =>
      ({
        type: 'function_call',
        callId,
        name,
        arguments: JSON.stringify({ q: args }),
        status: 'completed',
      }) as AgentInputItem,
  ),
  fc.record({ callId, out: text }).map(
    ({ callId, out }) =>
      ({
        type: 'function_call_result',
        callId,
        name: 'weather',
        status: 'completed',
        output: { type: 'text', text: out },
      }) as AgentInputItem,
  ),
  text.map(
    (t) =>
      ({
        type: 'reasoning',
        content: [{ type: 'input_text', text: t }],
        providerData: { nested: { n: 1.5, list: [true, null] } },
      }) as AgentInputItem,
  ),
);

/** Whether an item is one the SDK's history transactions accept. */
export const isModelItem = (item: unknown): boolean => protocol.ModelItem.safeParse(item).success;
