import { canonicalJson } from '../shared/domain/canonical.js';
import type { DeltaOp, JsonObject } from '../shared/domain/state.js';

/** The agent workload the checkpoint benches share (bench/checkpoints.ts, bench/state-v2.ts). */

const WORDS = 'the agent calls a tool then reads its result and plans the next step'.split(' ');

export const text = (seed: number, length: number): string => {
  let out = '';
  for (let i = seed; out.length < length; i++) out += `${WORDS[i % WORDS.length]} `;
  return out.slice(0, length);
};

export const message = (turn: number, length: number): JsonObject => ({
  role: turn % 2 === 0 ? 'user' : 'assistant',
  content: text(turn, length),
});

/**
 * About `bytes` of state: a window of short messages plus static context documents. The
 * canonical size is kept as documents are added (each adds its own bytes and a comma after
 * the first), so a 5 MiB state is built without re-serializing it per document.
 */
export const agentState = (bytes: number, window: number): JsonObject => {
  const documents: JsonObject[] = [];
  const messages = Array.from({ length: window }, (_, i) => message(i, 100));
  const state: JsonObject = { turn: 0, status: 'idle', messages, documents };
  let size = canonicalJson(state).length;
  for (let i = 0; size < bytes; i++) {
    const doc = { id: `doc-${i}`, text: text(i, 500) };
    size += canonicalJson(doc).length + (documents.length > 0 ? 1 : 0);
    documents.push(doc);
  }
  return state;
};

/**
 * A typical turn: three sets of short values, one of them appending a message, and a delete
 * of the oldest message, so the state keeps its size however many turns run.
 */
export const typicalTurn = (turn: number): DeltaOp[] => [
  { op: 'set', path: '/turn', value: turn },
  { op: 'set', path: '/status', value: turn % 3 === 0 ? 'tool_call' : 'answered' },
  { op: 'set', path: '/messages/-', value: message(turn, 100) },
  { op: 'delete', path: '/messages/0' },
];
