import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  Annotation,
  BaseCheckpointSaver,
  DeltaChannel,
  END,
  MemorySaver,
  MessagesAnnotation,
  messagesDeltaReducer,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { HefestoClient } from '../packages/client/src/index.js';
import { HefestoSaver } from '../packages/langgraph/src/index.js';
import { startServer } from '../scripts/lib/server-process.js';
import { fmt, printTable } from './harness.js';

/**
 * LangGraph savers side by side on the issue's workload: a real StateGraph (messages
 * reducer, one model node adding a ~270-character AI message per invoke after a
 * ~270-character human message), INVOKES invokes on one thread (LangGraph writes 3
 * checkpoints per invoke), on HefestoSaver (embedded server, bytes after compaction),
 * SqliteSaver (plain reducer, and DeltaChannel(messagesDeltaReducer)) and MemorySaver.
 * Figures: bytes stored, invoke p50, put p50/p99, getTuple p50 (the one per invoke), and a
 * list page (limit 10) p50. HEFESTO_BENCH_LG_INVOKES changes the count (default 500).
 */

const INVOKES = Number(process.env.HEFESTO_BENCH_LG_INVOKES ?? 500);
const ROOT = 'bench-root-key-0123456789abcdef0123';
const THREAD: RunnableConfig = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };

const filler =
  'The quick brown fox jumps over the lazy dog while the agent weighs its next tool call. ';
const text = (who: string, i: number) => `${who} ${i}: ${filler.repeat(4)}`.slice(0, 270);

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? Number.NaN;
};
const now = () => Number(process.hrtime.bigint()) / 1000;

const treeBytes = (root: string) => {
  const by = new Map<string, number>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const rel = relative(root, p).split('/');
        // Objects by kind (base snapshots vs ledger segments), the rest by top-level name.
        const kind = rel.includes('snap') ? 'snap' : rel.includes('seg') ? 'seg' : 'other';
        const key = rel[0] === 'objects' ? `objects/ (${kind})` : (rel[0] ?? '');
        by.set(key, (by.get(key) ?? 0) + statSync(p).size);
      }
    }
  };
  walk(root);
  return by;
};

/** Times the saver's put and getTuple as the Pregel loop calls them. */
const instrument = (saver: BaseCheckpointSaver) => {
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

const graphOn = (saver: BaseCheckpointSaver, delta: boolean) => {
  const State = delta
    ? Annotation.Root({ messages: new DeltaChannel(messagesDeltaReducer) as never })
    : MessagesAnnotation;
  return new StateGraph(State as typeof MessagesAnnotation)
    .addNode('model', (s) => ({ messages: [new AIMessage(text('model', s.messages.length))] }))
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer: saver });
};

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(2)} MiB`;

interface Row {
  saver: string;
  bytes: number;
  invoke: number[];
  put: number[];
  getTuple: number[];
  list: number[];
  messages: number;
}

const workload = async (name: string, saver: BaseCheckpointSaver, delta = false) => {
  const times = instrument(saver);
  const graph = graphOn(saver, delta);
  const invoke: number[] = [];
  let messages = 0;
  for (let i = 0; i < INVOKES; i++) {
    const t = now();
    const out = await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, THREAD);
    invoke.push(now() - t);
    messages = out.messages.length;
  }
  const list: number[] = [];
  for (let i = 0; i < 21; i++) {
    const t = now();
    for await (const _ of saver.list(THREAD, { limit: 10 })) {
      // one page
    }
    list.push(now() - t);
  }
  return { saver: name, invoke, list, messages, ...times };
};

const compactAll = async (url: string) => {
  const pass = async () => {
    const res = await fetch(`${url}/v1/admin/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT}` },
    });
    if (!res.ok) throw new Error(`compact: ${res.status} ${await res.text()}`);
    return (await res.json()) as { more: boolean; objectsDeleted: number };
  };
  // Superseded objects go after the grace period (1 s here): pass, wait, pass again, until
  // two rounds in a row find nothing to do (a long merge pass can end before its garbage is
  // due, so one idle round is not enough).
  for (let i = 0, idle = 0; i < 40 && idle < 2; i++) {
    const r = await pass();
    await new Promise((r2) => setTimeout(r2, 1100));
    const again = await pass();
    const quiet = !r.more && !again.more && r.objectsDeleted === 0 && again.objectsDeleted === 0;
    idle = quiet ? idle + 1 : 0;
  }
};

/** What the HTTP saver's path is measured against, printed beside its budgets. */
interface PathFigures {
  healthz: number[];
  /** The saver's own requests (getTuple's GET .../tuple, put's POST .../checkpoints), timed. */
  tupleRequests: number[];
  putRequests: number[];
  history: Array<{ checkpoints: number; p50: number; requests: number; walk?: number }>;
}

/**
 * The issue's budgets for the saver over HTTP: a GET /healthz round trip from the same
 * process and fetch (the floor every request pays), and getDeltaChannelHistory on threads of
 * 50 and 500 checkpoints of a DeltaChannel messages graph (on a server of their own, so the
 * workload's bytes stay its own; snapshotFrequency past the thread's length, so every history
 * walks the whole thread: the depth the budget is about), timed and its requests counted,
 * against the base class's walk (one getTuple per ancestor).
 */
const pathFigures = async (
  url: string,
  timed: Pick<PathFigures, 'tupleRequests' | 'putRequests'>,
): Promise<PathFigures> => {
  const healthz: number[] = [];
  for (let i = 0; i < 201; i++) {
    const t = now();
    const res = await fetch(`${url}/healthz`);
    await res.arrayBuffer();
    healthz.push(now() - t);
  }
  let requests = 0;
  const counting = ((input: string | URL | Request, init?: RequestInit) => {
    requests++;
    return fetch(input, init);
  }) as typeof fetch;
  const history: PathFigures['history'] = [];
  // The history threads on a server of their own: not counted in the workload's bytes.
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-bench-lg-history-'));
  const own = await startServer({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: ROOT });
  try {
    for (const checkpoints of [50, 500]) {
      const saver = new HefestoSaver({
        client: new HefestoClient({ baseUrl: own.url, apiKey: ROOT, fetch: counting }),
        prefix: `hist${checkpoints}`,
      });
      const State = Annotation.Root({
        messages: new DeltaChannel(messagesDeltaReducer, { snapshotFrequency: 1_000_000 }) as never,
      });
      const graph = new StateGraph(State as typeof MessagesAnnotation)
        .addNode('model', (s) => ({ messages: [new AIMessage(text('model', s.messages.length))] }))
        .addEdge(START, 'model')
        .addEdge('model', END)
        .compile({ checkpointer: saver });
      const thread = { configurable: { thread_id: 'h', checkpoint_ns: '' } };
      let puts = 0;
      const put = saver.put.bind(saver);
      saver.put = (...args) => {
        puts++;
        return put(...args);
      };
      for (let i = 0; puts < checkpoints; i++) {
        await graph.invoke({ messages: [new HumanMessage(text('human', i))] }, thread);
      }
      const call = { config: thread, channels: ['messages'] };
      const times: number[] = [];
      let perCall = 0;
      for (let i = 0; i < 21; i++) {
        const before = requests;
        const t = now();
        await saver.getDeltaChannelHistory(call);
        times.push(now() - t);
        perCall = requests - before;
      }
      const walks: number[] = [];
      for (let i = 0; i < (checkpoints >= 500 ? 3 : 5); i++) {
        const t = now();
        await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, call);
        walks.push(now() - t);
      }
      history.push({
        checkpoints: puts,
        p50: q(times, 0.5),
        requests: perCall,
        walk: q(walks, 0.5),
      });
    }
  } finally {
    own.child.kill('SIGKILL');
    await own.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { healthz, history, ...timed };
};

/** Times the client requests under the saver's getTuple and put (the rest is the saver's). */
const timeRequests = (client: HefestoClient) => {
  const tupleRequests: number[] = [];
  const putRequests: number[] = [];
  const get = client.getCheckpointTuple.bind(client);
  const put = client.checkpoint.bind(client);
  client.getCheckpointTuple = async (...args) => {
    const t = now();
    const r = await get(...args);
    tupleRequests.push(now() - t);
    return r;
  };
  client.checkpoint = async (...args) => {
    const t = now();
    const r = await put(...args);
    putRequests.push(now() - t);
    return r;
  };
  return { tupleRequests, putRequests };
};

const hefesto = async (
  name: string,
  env: Record<string, string>,
  measurePath = false,
): Promise<Row & { parts: Map<string, number>; path?: PathFigures }> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-bench-lg-'));
  const server = await startServer({
    HEFESTO_DATA_DIR: dataDir,
    HEFESTO_API_KEY: ROOT,
    HEFESTO_COMPACT_INTERVAL_MS: '0',
    HEFESTO_COMPACT_GRACE_SECONDS: '1',
    ...env,
  });
  try {
    const saver = new HefestoSaver({ baseUrl: server.url, apiKey: ROOT });
    const requests = timeRequests(saver.client);
    const row = await workload(name, saver);
    const path = measurePath ? await pathFigures(server.url, requests) : undefined;
    await compactAll(server.url);
    // Measured after a clean stop: SQLite folds its WAL into the database file on close.
    server.child.kill('SIGTERM');
    await server.exited;
    const parts = treeBytes(dataDir);
    const bytes = [...parts.values()].reduce((a, b) => a + b, 0);
    return { ...row, bytes, parts, ...(path ? { path } : {}) };
  } finally {
    server.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
};

const sqlite = async (name: string, delta: boolean) => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-lg-sqlite-'));
  const path = join(dir, 'lg.db');
  const saver = SqliteSaver.fromConnString(path);
  try {
    const row = await workload(name, saver, delta);
    saver.db.pragma('wal_checkpoint(TRUNCATE)');
    saver.db.close();
    const bytes = [...treeBytes(dir).values()].reduce((a, b) => a + b, 0);
    return { ...row, bytes };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

const memory = async () => {
  const saver = new MemorySaver();
  const row = await workload('MemorySaver', saver);
  let bytes = 0;
  const count = (v: unknown): void => {
    if (v instanceof Uint8Array) bytes += v.byteLength;
    else if (typeof v === 'string') bytes += Buffer.byteLength(v);
    else if (Array.isArray(v)) v.forEach(count);
    else if (v && typeof v === 'object') Object.values(v).forEach(count);
  };
  count(saver.storage);
  count(saver.writes);
  return { ...row, bytes };
};

const verdictOf = (ok: boolean) => (ok ? 'met' : 'NOT met');

/** The saver-path figures beside their budgets (issue 24), ratios within this run. */
const printPathBudgets = (r: Row & { path?: PathFigures }) => {
  if (!r.path) return;
  const healthz = q(r.path.healthz, 0.5);
  const getTuple = q(r.getTuple, 0.5);
  const put = q(r.put, 0.5);
  const rows: Array<Record<string, string>> = [
    {
      figure: 'GET /healthz round trip p50 (same process, same fetch)',
      value: fmt(healthz),
      budget: '(the floor)',
      verdict: '',
    },
    {
      figure: 'getTuple p50 (over HTTP, durability: fsync per commit)',
      value: `${fmt(getTuple)} = ${(getTuple / healthz).toFixed(2)}x healthz`,
      budget: '<= 3x healthz',
      verdict: verdictOf(getTuple <= 3 * healthz),
    },
    {
      figure: 'put p50 (over HTTP, durability: fsync per commit)',
      value: `${fmt(put)} = ${(put / healthz).toFixed(2)}x healthz`,
      budget: '<= 4x healthz',
      verdict: verdictOf(put <= 4 * healthz),
    },
  ];
  const tupleRequest = q(r.path.tupleRequests, 0.5);
  const putRequest = q(r.path.putRequests, 0.5);
  rows.push(
    {
      figure: '  of which getTuple’s request (GET .../tuple) p50',
      value: `${fmt(tupleRequest)} = ${(tupleRequest / healthz).toFixed(2)}x healthz (the rest: the saver decoding the channels)`,
      budget: '',
      verdict: '',
    },
    {
      figure: '  of which put’s request (POST .../checkpoints) p50',
      value: `${fmt(putRequest)} = ${(putRequest / healthz).toFixed(2)}x healthz (the rest: the saver encoding and diffing)`,
      budget: '',
      verdict: '',
    },
  );
  for (const h of r.path.history) {
    rows.push({
      figure: `getDeltaChannelHistory p50, ${h.checkpoints} checkpoints deep`,
      value: `${fmt(h.p50)}, ${h.requests} request(s)`,
      budget: 'one request',
      verdict: verdictOf(h.requests === 1),
    });
    if (h.walk === undefined) continue;
    const ratio = h.walk / h.p50;
    const big = h.checkpoints >= 500;
    rows.push({
      figure: `base-class walk (one getTuple per ancestor), ${h.checkpoints} deep`,
      value: `${fmt(h.walk)}: ${ratio.toFixed(1)}x slower`,
      budget: big ? '>= 10x slower than the one request' : '(for reference)',
      verdict: big ? verdictOf(ratio >= 10) : '',
    });
  }
  printTable(`HefestoSaver over HTTP: the saver path's budgets (${r.saver})`, rows);
};

const summary = (r: Row) =>
  `${r.saver}: ${mib(r.bytes)}, invoke p50 ${fmt(q(r.invoke, 0.5))}, put p50 ${fmt(q(r.put, 0.5))}`;

/**
 * HEFESTO_BENCH_LG_K: a second HefestoSaver run with base snapshots every K deltas instead
 * of 25 (what the snapshots cost in bytes; hydration then replays up to K deltas per read,
 * so a large K is slow).
 */
export const runLangGraphBench = async () => {
  const rows: Row[] = [];
  const done = <R extends Row>(r: R): R => {
    rows.push(r);
    console.error(`[bench langgraph] ${summary(r)}`);
    return r;
  };
  const k25 = done(await hefesto('HefestoSaver (embedded, K=25 default)', {}, true));
  const k = process.env.HEFESTO_BENCH_LG_K;
  const kRun = k
    ? done(await hefesto(`HefestoSaver (embedded, K=${k})`, { HEFESTO_SNAPSHOT_EVERY: k }))
    : undefined;
  done(await sqlite('SqliteSaver (plain reducer)', false));
  const delta = done(await sqlite('SqliteSaver + DeltaChannel(messagesDeltaReducer)', true));
  done(await memory());
  printTable(
    `LangGraph savers: ${INVOKES} invokes of a messages graph (~270-char human + model message each)`,
    rows.map((r) => ({
      saver: r.saver,
      'bytes stored': mib(r.bytes),
      messages: r.messages,
      'invoke p50': fmt(q(r.invoke, 0.5)),
      'put p50': fmt(q(r.put, 0.5)),
      'put p99': fmt(q(r.put, 0.99)),
      'getTuple p50': fmt(q(r.getTuple, 0.5)),
      'list page (10) p50': fmt(q(r.list, 0.5)),
      puts: r.put.length,
    })),
  );
  printTable(
    'HefestoSaver bytes after compaction, by part of the data directory',
    [...k25.parts.keys()].map((part) => ({
      part,
      'K=25': mib(k25.parts.get(part) ?? 0),
      ...(kRun ? { [`K=${k}`]: mib(kRun.parts.get(part) ?? 0) } : {}),
    })),
  );
  printPathBudgets(k25);
  const budget = delta.bytes / 2;
  const verdict = (r: Row) => `${mib(r.bytes)} ${r.bytes <= budget ? 'met' : 'NOT met'}`;
  console.log(
    `\nBudget (HefestoSaver bytes <= half of SqliteSaver + DeltaChannel = ${mib(budget)}): ` +
      `K=25 ${verdict(k25)}${kRun ? `; K=${k} ${verdict(kRun)}` : ''}.`,
  );
};

if (import.meta.url === `file://${process.argv[1]}`) await runLangGraphBench();
