import { Agent, type AgentInputItem, MemorySession, Runner, tool } from '@openai/agents-core';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * The SDK's own Runner and Agent on a HefestoSession, with a scripted model (no network): a
 * turn with a tool call persists what it persists on MemorySession (through history
 * transactions, since HefestoSession offers them), a second session object continues the
 * conversation, and a turn whose history write loses its reply is persisted once.
 */

const weatherCalls: string[] = [];
const weather = tool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
  execute: async (input) => {
    const { city } = input as { city: string };
    weatherCalls.push(city);
    return `sunny in ${city}`;
  },
});

const script = () =>
  new ScriptedModel([
    [functionCall('weather', { city: 'Paris' }, { callId: 'call_1' })],
    [assistantMessage('It is sunny in Paris.')],
    [assistantMessage('You asked about Paris.')],
  ]);

const agentOn = (model: ScriptedModel) =>
  new Agent({ name: 'Forecaster', instructions: 'Answer briefly.', model, tools: [weather] });

/** Items without the ids and provider data the runner makes up per run. */
const shape = (items: AgentInputItem[]) =>
  items.map((item) => {
    const { id: _id, providerData: _p, ...rest } = item as Record<string, unknown>;
    return rest;
  });

describe('the SDK Runner on a HefestoSession', () => {
  let world: SessionWorld;
  beforeAll(async () => {
    world = await startWorld(memoryStores);
  });
  afterAll(() => world.close());

  it('persists a tool-calling turn as MemorySession does, and a second session continues it', async () => {
    const reference = new MemorySession();
    const refModel = script();
    await new Runner().run(agentOn(refModel), 'Weather in Paris?', { session: reference });
    await new Runner().run(agentOn(refModel), 'What did I ask?', { session: reference });

    const model = script();
    const first = await new Runner().run(agentOn(model), 'Weather in Paris?', {
      session: world.session('runner-1'),
    });
    const second = await new Runner().run(agentOn(model), 'What did I ask?', {
      session: world.session('runner-1'),
    });

    expect(first.finalOutput).toBe('It is sunny in Paris.');
    expect(second.finalOutput).toBe('You asked about Paris.');
    const ours = await world.session('runner-1').getItems();
    expect(shape(ours)).toEqual(shape(await reference.getItems()));
    expect(ours).toHaveLength(6); // user, call, result, answer, user, answer
    // the second run sent the first run's history to the model
    expect(model.lastCall?.request.input).toHaveLength(5);
  });

  it('a turn whose history write lost its reply is persisted once (retried under its operation id)', async () => {
    weatherCalls.length = 0;
    const lose = { n: 0 };
    const session = world.session('runner-2', { lose });
    // The runner writes the turn (input, tool call, its result, the answer) after the tool
    // ran; the reply of that write is lost once, after the server committed it.
    const add = session.addItems.bind(session);
    session.addItems = async (items) => {
      lose.n = 1;
      return add(items);
    };

    const result = await new Runner().run(agentOn(script()), 'Weather in Paris?', { session });

    const history = await world.session('runner-2').getItems();
    expect(result.finalOutput).toBe('It is sunny in Paris.');
    expect(lose.n).toBe(0); // the reply was lost
    expect(weatherCalls).toEqual(['Paris']);
    expect(history.map((i) => (i as { type?: string }).type)).toEqual([
      'message',
      'function_call',
      'function_call_result',
      'message',
    ]);
  });
});
