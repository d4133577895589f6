import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  Annotation,
  type BaseCheckpointSaver,
  DeltaChannel,
  END,
  MessagesAnnotation,
  messagesDeltaReducer,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { openEmbedded } from '../packages/embedded/src/index.js';
import { HefestoSaver } from '../packages/langgraph/src/index.js';
import { startServer } from '../scripts/lib/server-process.js';
import { fmt, printTable } from './harness.js';

/**
 * Issue 24's in-process figure: HefestoSaver on the in-process engine (`openEmbedded`, the
 * app answering in this process, no socket) against HefestoSaver over HTTP (the embedded
 * server, its own process) and SqliteSaver + DeltaChannel (LangGraph's own, in process) at
 * its default and at `synchronous=FULL`, on one messages graph: INVOKES invokes of one thread
 * (a ~270-character human message in, a ~270-character model message out; LangGraph writes
 * about 3 checkpoints per invoke). Figures: invoke p50, put p50, getTuple p50, and the ratios
 * the issue budgets, measured side by side in this run (the same order every run, each row
 * after WARMUP untimed invokes on another thread).
 *
 * Durability, said by every row: the engine runs at its default, 'power-loss' (one fsync per
 * put: segment and records share one WAL, local-stores.ts), compared with SqliteSaver at
 * `synchronous=FULL` (equal durability), and at 'process-crash' (no fsync at a commit),
 * compared with SqliteSaver's default (WAL, NORMAL: survives a process crash, not a power
 * cut). The server over HTTP runs at 'power-loss'.
 * HEFESTO_BENCH_ENGINE_INVOKES changes the count (default 200).
 */

const INVOKES = Number(process.env.HEFESTO_BENCH_ENGINE_INVOKES ?? 200);
const WARMUP = 20;
const ROOT = 'bench-engine-root-key-0123456789abcdef';
const THREAD: RunnableConfig = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };

const filler =
  'The quick brown fox jumps over the lazy dog while the agent weighs its next tool call. ';
const text = (who: string, i: number) => `${who} ${i}: ${filler.repeat(4)}`.slice(0, 270);
const now = () => Number(process.hrtime.bigint()) / 1000;
const p50 = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

interface Row {
  saver: string;
  durability: string;
  invoke: number[];
  put: number[];
  getTuple: number[];
}

const timed = (saver: BaseCheckpointSaver) => {
  const put: number[] = [];
  const getTuple: number[] = [];
  const origPut = saver.put.bind(saver);
  const origGet = saver.getTuple.bind(saver);
  saver.put = async (...args) => {
    const t = now();
    const r = await origPut(...args);
    put.push(now() - t);
    return r;
  };
  saver.getTuple = async (...args) => {
    const t = now();
    const r = await origGet(...args);
    getTuple.push(now() - t);
    return r;
  };
  return { put, getTuple };
};

const workload = async (
  saver: string,
  durability: string,
  checkpointer: BaseCheckpointSaver,
  delta: boolean,
): Promise<Row> => {
  const State = delta
    ? Annotation.Root({ messages: new DeltaChannel(messagesDeltaReducer) as never })
    : MessagesAnnotation;
  const graph = new StateGraph(State as typeof MessagesAnnotation)
    .addNode('model', (s) => ({ messages: [new AIMessage(text('model', s.messages.length))] }))
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer });
  // Warm-up on a thread of its own (JIT, caches), not timed: every row starts warm, so the
  // order of the rows does not favour the later ones.
  const warm: RunnableConfig = { configurable: { thread_id: 'warm-up', checkpoint_ns: '' } };
  for (let i = 0; i < WARMUP; i++) {
    await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, warm);
  }
  const times = timed(checkpointer);
  const invoke: number[] = [];
  for (let i = 0; i < INVOKES; i++) {
    const t = now();
    await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, THREAD);
    invoke.push(now() - t);
  }
  const row = { saver, durability, invoke, ...times };
  console.error(`[bench engine] ${saver}: invoke p50 ${fmt(p50(invoke))}`);
  return row;
};

const FSYNC = 'fsync per commit';

const PROCESS_CRASH = 'process-crash: no fsync at a commit';

const inProcess = async (durability: 'power-loss' | 'process-crash'): Promise<Row> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-bench-engine-'));
  const engine = await openEmbedded({
    dataDir,
    durability,
    env: { HEFESTO_COMPACT_INTERVAL_MS: '0' },
    logLevel: 'silent',
  });
  try {
    const saver = new HefestoSaver({ client: engine.client });
    const mode = durability === 'power-loss' ? `power-loss: ${FSYNC}` : PROCESS_CRASH;
    return await workload('HefestoSaver, in-process engine', mode, saver, false);
  } finally {
    await engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
};

const overHttp = async (): Promise<Row> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-bench-engine-http-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dataDir,
    HEFESTO_API_KEY: ROOT,
    HEFESTO_COMPACT_INTERVAL_MS: '0',
  });
  try {
    const saver = new HefestoSaver({ baseUrl: server.url, apiKey: ROOT });
    return await workload(
      'HefestoSaver, embedded server over HTTP',
      `power-loss: ${FSYNC}`,
      saver,
      false,
    );
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
};

const sqlite = async (full: boolean): Promise<Row> => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-engine-sqlite-'));
  const saver = SqliteSaver.fromConnString(join(dir, 'lg.db'));
  // The saver sets its pragmas on first use: make it open the database first.
  await saver.getTuple(THREAD);
  if (full) saver.db.pragma('synchronous = FULL');
  const level = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][
    Number(saver.db.pragma('synchronous', { simple: true }))
  ];
  const mode = full ? `WAL, synchronous=FULL (${FSYNC})` : `default: WAL, synchronous=${level}`;
  try {
    return await workload('SqliteSaver + DeltaChannel', mode, saver, true);
  } finally {
    saver.db.close();
    rmSync(dir, { recursive: true, force: true });
  }
};

export const runEmbeddedEngineBench = async (): Promise<void> => {
  const engine = await inProcess('power-loss');
  const engineCrash = await inProcess('process-crash');
  const http = await overHttp();
  const lgDefault = await sqlite(false);
  const lgFull = await sqlite(true);
  const rows = [engine, engineCrash, http, lgFull, lgDefault];
  printTable(
    `In-process engine: ${INVOKES} invokes of a messages graph, one thread`,
    rows.map((r) => ({
      saver: r.saver,
      durability: r.durability,
      'invoke p50': fmt(p50(r.invoke)),
      'put p50': fmt(p50(r.put)),
      'getTuple p50': fmt(p50(r.getTuple)),
      puts: r.put.length,
    })),
  );
  const ratio = (a: Row, b: Row) => p50(a.invoke) / p50(b.invoke);
  const line = (what: string, value: number, budget: number) =>
    `| ${what} | ${value.toFixed(2)}x | ${budget}x | ${value <= budget ? 'met' : 'NOT met'} |`;
  const [load1] = loadavg();
  console.log(
    [
      '',
      `| invoke p50 ratio (this run, load average ${load1?.toFixed(2)}) | measured | budget | |`,
      '| --- | --- | --- | --- |',
      line(
        'in-process engine, power-loss / SqliteSaver + DeltaChannel, synchronous=FULL',
        ratio(engine, lgFull),
        1.1,
      ),
      line(
        'in-process engine, process-crash / SqliteSaver + DeltaChannel, default (NORMAL)',
        ratio(engineCrash, lgDefault),
        1.1,
      ),
      line(
        'over HTTP, power-loss / SqliteSaver + DeltaChannel, synchronous=FULL',
        ratio(http, lgFull),
        1.5,
      ),
      `| in-process engine, power-loss / over HTTP, power-loss | ${ratio(engine, http).toFixed(2)}x | | |`,
      `| in-process engine, power-loss / SqliteSaver + DeltaChannel, default (unequal durability) | ${ratio(engine, lgDefault).toFixed(2)}x | | |`,
    ].join('\n'),
  );
};

if (import.meta.url === `file://${process.argv[1]}`) await runEmbeddedEngineBench();
