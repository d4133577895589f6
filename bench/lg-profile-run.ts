import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { HefestoSaver } from '../packages/langgraph/src/index.js';
import { startServer } from '../scripts/lib/server-process.js';

/**
 * The HefestoSaver part of langgraph-savers.ts alone, keeping its data directory (OUT, else a
 * new temp dir, printed) to look into: which records and objects hold the bytes, free pages.
 * NOCOMPACT=1 skips the compaction. HEFESTO_BENCH_LG_INVOKES as there (default 500).
 */
const INVOKES = Number(process.env.HEFESTO_BENCH_LG_INVOKES ?? 500);
const ROOT = 'bench-root-key-0123456789abcdef0123';
const filler =
  'The quick brown fox jumps over the lazy dog while the agent weighs its next tool call. ';
const text = (who: string, i: number) => `${who} ${i}: ${filler.repeat(4)}`.slice(0, 270);
const dataDir = process.env.OUT ?? mkdtempSync(join(tmpdir(), 'h17-lg-'));
const server = await startServer({
  HEFESTO_DATA_DIR: dataDir,
  HEFESTO_API_KEY: ROOT,
  HEFESTO_COMPACT_INTERVAL_MS: '0',
  HEFESTO_COMPACT_GRACE_SECONDS: '1',
});
const saver = new HefestoSaver({ baseUrl: server.url, apiKey: ROOT });
const graph = new StateGraph(MessagesAnnotation)
  .addNode('model', (s) => ({ messages: [new AIMessage(text('model', s.messages.length))] }))
  .addEdge(START, 'model')
  .addEdge('model', END)
  .compile({ checkpointer: saver });
const THREAD = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };
for (let i = 0; i < INVOKES; i++) {
  await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, THREAD);
}
if (!process.env.NOCOMPACT) {
  const pass = async () => {
    const res = await fetch(`${server.url}/v1/admin/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT}` },
    });
    if (!res.ok) throw new Error(`compact: ${res.status} ${await res.text()}`);
    return (await res.json()) as { more: boolean; objectsDeleted: number };
  };
  for (let i = 0, idle = 0; i < 40 && idle < 2; i++) {
    const r = await pass();
    await new Promise((r2) => setTimeout(r2, 1100));
    const again = await pass();
    const quiet = !r.more && !again.more && r.objectsDeleted === 0 && again.objectsDeleted === 0;
    idle = quiet ? idle + 1 : 0;
  }
}
server.child.kill('SIGTERM');
await server.exited;
console.log(dataDir);
