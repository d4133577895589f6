import { describe, expect, it } from 'vitest';
import {
  agentsItem,
  applyOps,
  checkpointIdOf,
  decodeValue,
  edgeKey,
  graphShapeOf,
  langchainMessage,
  parseThreadStream,
  type Step,
  sessionStatus,
  statusOf,
  stepsOf,
  type Tuple,
  threadStreamId,
  visitedIn,
  wholeStates,
} from '../../console/src/runs.js';
import { emptyStateDigest } from '../../packages/client/src/index.js';
import { streamIdOf } from '../../packages/langgraph/src/stream-ids.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/copy-thread.js';

/** What the console derives from what HefestoSaver and HefestoSession store (console/src/runs.ts). */
describe('console runs', () => {
  it('reads thread ids back from the saver’s stream ids, and names no other stream a thread', () => {
    for (const [thread, ns] of [
      ['t-1', ''],
      ['user|42.a', 'child:1'],
      ['Ünïcode ✓', ''],
    ] as const) {
      const id = streamIdOf('lg', thread, ns);
      expect(parseThreadStream(id)).toEqual({ threadId: thread, ns });
      expect(threadStreamId(thread, ns)).toBe(id);
    }
    expect(parseThreadStream('run-1')).toBeUndefined();
    expect(parseThreadStream('lg.a.b.c')).toBeUndefined();
    expect(parseThreadStream('lg..')).toBeUndefined();
    expect(checkpointIdOf('x.6162')).toBe('ab');
    expect(EMPTY_STATE_DIGEST_V2).toBe(emptyStateDigest(2));
  });

  it('makes a tuples page’s states whole from the oldest and the deltas', () => {
    const page = [
      {
        checkpoint: { label: 'c2', seq: 3 },
        seq: 3,
        writes: [],
        deltas: [{ seq: 3, ops: [{ op: 'set', path: '/m/-', value: 'b' }] }],
      },
      { checkpoint: { label: 'c1', seq: 2 }, seq: 2, writes: [], state: { m: ['a'] } },
    ];
    expect(wholeStates(page).map((t) => t.state)).toEqual([{ m: ['a', 'b'] }, { m: ['a'] }]);
  });

  it('derives the node that ran, its writes, the next nodes and interrupts', () => {
    const tuple = (
      label: string,
      seq: number,
      parentLabel: string | undefined,
      seen: object,
      versions: object,
      values: object,
      writes: Tuple['writes'] = [],
    ): Tuple => ({
      checkpoint: { label, seq, parentLabel, meta: { step: seq - 2, source: 'loop' } },
      seq,
      state: { ckpt: { versions_seen: seen, channel_versions: versions }, values },
      writes,
    });
    const steps = stepsOf([
      tuple(
        'c2',
        2,
        'c1',
        { agent: { 'branch:to:agent': 1 } },
        { 'branch:to:agent': 1, 'branch:to:tools': 2, messages: 2 },
        { 'branch:to:tools': { j: null }, messages: { j: ['hi', 'call'] } },
        [
          {
            taskId: 't2',
            taskPath: '~__pregel_pull, tools',
            idx: -3,
            channel: '__interrupt__',
            value: { j: [{ id: 'i1', value: { ask: 'ok?' } }] },
          },
        ],
      ),
      tuple(
        'c1',
        1,
        undefined,
        {},
        { 'branch:to:agent': 1, messages: 1 },
        { 'branch:to:agent': { j: null }, messages: { j: ['hi'] } },
        [
          {
            taskId: 't1',
            taskPath: '~__pregel_pull, agent',
            idx: 0,
            channel: 'messages',
            value: { j: ['call'] },
          },
        ],
      ),
    ]);
    expect(steps.map((s) => [s.label, s.ran, s.next])).toEqual([
      ['c1', [], ['agent']],
      ['c2', ['agent'], ['tools']],
    ]);
    expect(steps[1]?.writes).toEqual([{ node: 'agent', channel: 'messages', value: ['call'] }]);
    expect(steps[1]?.interrupts).toEqual([
      { node: 'tools', taskId: 't2', id: 'i1', value: { ask: 'ok?' } },
    ]);
    expect(steps[1]?.channels).toEqual({ messages: ['hi', 'call'] });
    expect(statusOf(steps[1])).toBe('interrupted');
    expect(statusOf(steps[1], true)).toBe('running');
    expect(statusOf(steps[0])).toBe('running');
    expect(statusOf({ ...(steps[1] as Step), interrupts: [], next: [] })).toBe('done');
    expect(statusOf({ ...(steps[1] as Step), errors: [{ node: 'x', value: 'boom' }] })).toBe(
      'failed',
    );
  });

  it('names binary and by-ref channel values instead of decoding them', () => {
    expect(decodeValue({ j: { a: 1 } })).toEqual({ a: 1 });
    expect(decodeValue({ t: 'msgpack', b: 'AAAA' })).toEqual({ $binary: 'msgpack', bytes: 3 });
    expect(decodeValue({ r: { hash: 'h', size: 9 } })).toEqual({ $byRef: true, bytes: 9 });
  });

  it('reads LangChain messages and OpenAI Agents items as chat messages', () => {
    expect(
      langchainMessage({
        lc: 1,
        type: 'constructor',
        id: ['langchain_core', 'messages', 'AIMessage'],
        kwargs: {
          content: [{ type: 'text', text: 'hi' }],
          tool_calls: [{ id: 'c', name: 'f', args: { x: 1 } }],
        },
      }),
    ).toEqual({
      role: 'assistant',
      text: 'hi',
      toolCalls: [{ id: 'c', name: 'f', args: '{"x":1}' }],
      toolCallId: undefined,
      name: undefined,
    });
    expect(langchainMessage({ type: 'human', content: 'yo' }).role).toBe('user');
    expect(agentsItem({ type: 'function_call_result', callId: 'c', output: 'ok' })).toMatchObject({
      role: 'tool',
      text: 'ok',
      toolCallId: 'c',
    });
    expect(
      sessionStatus([
        { role: 'user', content: 'q' },
        { type: 'function_call', callId: 'c' },
      ]),
    ).toBe('running');
    expect(
      sessionStatus([
        { type: 'function_call', callId: 'c' },
        { type: 'function_call_result', callId: 'c' },
        { role: 'assistant', content: 'a' },
      ]),
    ).toBe('done');
  });

  it('applies a hostile delta without reaching Object.prototype', () => {
    const state: Record<string, unknown> = { a: { b: 1 }, list: [1] };
    try {
      applyOps(state, [
        { op: 'set', path: '/constructor/prototype/polluted', value: 'yes' },
        { op: 'set', path: '/__proto__/polluted', value: 'yes' },
        { op: 'set', path: '/a/__proto__/polluted', value: 'yes' },
        { op: 'set', path: '/a/constructor/prototype/polluted', value: 'yes' },
        { op: 'set', path: '/list/constructor/prototype/polluted', value: 'yes' },
        { op: 'set', path: '/toString/x', value: 'yes' },
        { op: 'set', path: '/a/c', value: 2 },
        { op: 'set', path: '/list/-', value: 2 },
      ]);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(([] as unknown as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.hasOwn(state, '__proto__')).toBe(false);
      expect(Object.getPrototypeOf(state)).toBe(Object.prototype);
      // The ordinary ops around the hostile ones still apply.
      expect(state).toEqual({ a: { b: 1, c: 2 }, list: [1, 2] });
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
      delete (Array.prototype as unknown as Record<string, unknown>).polluted;
    }
  });

  it('reads a recorded graph shape, refuses a malformed one, and marks the path a run took', () => {
    const graph = {
      v: 1,
      nodes: ['__start__', 'agent', 'tools', '__end__'],
      edges: [
        { source: '__start__', target: 'agent' },
        { source: 'agent', target: 'tools', conditional: true },
        { source: 'tools', target: 'agent' },
        { source: 'agent', target: '__end__', conditional: true },
      ],
    };
    const shape = graphShapeOf({ graph });
    expect(shape?.nodes).toEqual(graph.nodes);
    expect(shape?.edges[1]).toEqual({ source: 'agent', target: 'tools', conditional: true });
    for (const bad of [
      undefined,
      { ...graph, v: 2 },
      { ...graph, nodes: [1] },
      { ...graph, edges: [{ source: 'agent', target: 'elsewhere' }] },
      { ...graph, nodes: Array.from({ length: 257 }, (_, i) => `n${i}`) },
    ])
      expect(graphShapeOf({ graph: bad })).toBeUndefined();
    const step = (ran: string[]) => ({ ran }) as Step;
    const visit = visitedIn(
      shape as NonNullable<typeof shape>,
      [step([]), step(['agent']), step(['tools']), step(['agent'])],
      [],
      true,
    );
    expect([...visit.nodes].sort()).toEqual(['__end__', '__start__', 'agent', 'tools']);
    expect([...visit.edges].sort()).toEqual(
      [
        edgeKey('__start__', 'agent'),
        edgeKey('agent', 'tools'),
        edgeKey('tools', 'agent'),
        edgeKey('agent', '__end__'),
      ].sort(),
    );
    const waiting = visitedIn(
      shape as NonNullable<typeof shape>,
      [step(['agent'])],
      ['tools'],
      false,
    );
    expect([...waiting.nodes]).toEqual(['__start__', 'agent']);
    expect([...waiting.next]).toEqual(['tools']);
  });
});
