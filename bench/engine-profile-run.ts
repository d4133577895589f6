import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { openEmbedded } from '../packages/embedded/src/index.js';
import { HefestoSaver } from '../packages/langgraph/src/index.js';

/**
 * The in-process invoke alone, to profile (`node --cpu-prof --import tsx
 * bench/engine-profile-run.ts`): INVOKES invokes of embedded-engine.ts's messages graph on
 * the in-process engine, at HEFESTO_DURABILITY (default power-loss). Prints the p50.
 */
const INVOKES = Number(process.env.HEFESTO_BENCH_ENGINE_INVOKES ?? 200);
const filler =
  'The quick brown fox jumps over the lazy dog while the agent weighs its next tool call. ';
const text = (who: string, i: number) => `${who} ${i}: ${filler.repeat(4)}`.slice(0, 270);
const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-engine-prof-'));
const durability =
  process.env.HEFESTO_DURABILITY === 'process-crash' ? 'process-crash' : 'power-loss';
const engine = await openEmbedded({
  dataDir,
  durability,
  env: { HEFESTO_COMPACT_INTERVAL_MS: '0' },
  logLevel: 'silent',
});
const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', (s) => ({ messages: [new AIMessage(text('model', s.messages.length))] }))
  .addEdge(START, 'model')
  .addEdge('model', END)
  .compile({ checkpointer: new HefestoSaver({ client: engine.client }) });
const THREAD = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };
const times: number[] = [];
for (let i = 0; i < INVOKES; i++) {
  const t = performance.now();
  await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, THREAD);
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log(`${durability}: invoke p50 ${times[Math.floor(times.length / 2)]?.toFixed(2)} ms`);
await engine.close();
rmSync(dataDir, { recursive: true, force: true });
