import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import { MemoryObjectStore } from '../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../shared/adapters/memory/memory-record-store.js';
import { Reader } from '../shared/chain/reader.js';
import { segmentPrefix, snapshotKey } from '../shared/chain/storage-keys.js';
import { Appender } from '../shared/commit/append.js';
import { CheckpointLabels } from '../shared/commit/labels.js';
import { canonicalJson } from '../shared/domain/canonical.js';
import { genesisHash, payloadJsonOf, sealBatch } from '../shared/domain/event.js';
import { sha256Hex } from '../shared/domain/hashing.js';
import { decodeSegment, encodeSegment } from '../shared/domain/segment.js';
import {
  applyOps,
  DELTA_EVENT,
  type DeltaOp,
  type DeltaPayload,
  type JsonObject,
} from '../shared/domain/state.js';
import { EMPTY_STATE_DIGEST_V2 } from '../shared/domain/state-v2/index.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { Checkpointer } from '../shared/state/checkpoint.js';
import { StateStore } from '../shared/state/state.js';
import { countingObjects } from '../test/support/counting.js';
import { agentState, message, typicalTurn } from './agent-workload.js';
import { fmt, printTable } from './harness.js';
import { type LangGraphTurn, storeWithLangGraph } from './langgraph.js';

/**
 * Checkpoint costs against the DESIGN.md budgets, all in one run:
 * 1. bytes of a typical turn's delta (the segment object it writes) and of a base snapshot;
 * 2. server CPU per checkpoint on memory adapters, with a breakdown for a ~50 KB state;
 * 3. hydration time and objects read at 100, 1,000 and 10,000 turns (embedded default);
 * 4. storage after 1,000 turns of a growing chat history, Hefesto vs LangGraph's SqliteSaver.
 */

const T = 'bench';
const K = 25;
const clock = { now: () => Date.now() };

const services = (stores: { objects: ObjectStore; records: RecordStore }) => {
  const appender = new Appender({ ...stores, clock });
  const reader = new Reader(stores);
  const states = new StateStore({ ...stores, reader, snapshotEvery: K });
  const labels = new CheckpointLabels(stores.records);
  return { states, checkpointer: new Checkpointer({ appender, states, reader, labels }) };
};

/** The embedded default in a temp dir, laid out as functions/wiring does it. */
const embedded = () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-'));
  const objects = new LocalObjectStore({ dir });
  const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
  return {
    dir,
    objects,
    records,
    /** Closing the last SQLite connection checkpoints the WAL into the main file. */
    close: () => {
      objects.close();
      records.close();
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
};

/** Checkpoints ops on top of the digest the previous checkpoint returned. */
const streamWriter = (checkpointer: Checkpointer, stream: string) => {
  // A new stream is v2 (records-v2): its first checkpoint starts from v2's digest of {}.
  let digest = EMPTY_STATE_DIGEST_V2;
  return async (ops: DeltaOp[]) => {
    const result = await checkpointer.checkpoint({ tenant: T, stream, ops, baseDigest: digest });
    digest = result.stateDigest;
    return result;
  };
};

interface FileInfo {
  path: string;
  size: number;
  allocated: number;
}

const filesUnder = (dir: string): FileInfo[] =>
  (readdirSync(dir, { recursive: true }) as string[]).flatMap((name) => {
    const st = statSync(join(dir, name));
    return st.isFile()
      ? [{ path: `${sep}${name}`, size: st.size, allocated: st.blocks * 512 }]
      : [];
  });

const sum = (files: FileInfo[], field: 'size' | 'allocated' = 'size') =>
  files.reduce((n, f) => n + f[field], 0);

const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
const int = (n: number) => n.toLocaleString('en-US');
const pct = (part: number, whole: number) => `${((part / whole) * 100).toFixed(0)}%`;

const seedOps = (state: JsonObject): DeltaOp[] =>
  Object.entries(structuredClone(state)).map(([k, value]) => ({ op: 'set', path: `/${k}`, value }));

const deltaSizes = async () => {
  const local = embedded();
  const stream = 'sizes';
  try {
    const write = streamWriter(services(local).checkpointer, stream);
    const state = agentState(50_000, 100);
    await write(seedOps(state));
    for (let turn = 1; turn < 2 * K; turn++) await write(typicalTurn(turn));
    // Segment 1 is the seed; the rest are typical turns.
    const segments = (await local.objects.list(segmentPrefix(T, stream))).items.slice(1);
    const snapPrefix = snapshotKey(T, stream, 0, '').replace(/[^/]*$/, '');
    const snapshots = (await local.objects.list(snapPrefix)).items;
    const newest = await local.objects.get(segments.at(-1)?.key ?? '');
    if (!newest || snapshots.length === 0) throw new Error('bench stream is missing objects');
    const firstSeq = segments.length + 1;
    const [event] = decodeSegment(newest.body, { tenant: T, stream, firstSeq }).events;
    const payloadJson = event ? payloadJsonOf(event) : '';
    const opsJson = canonicalJson((JSON.parse(payloadJson) as DeltaPayload).ops);
    const files = filesUnder(local.dir);
    const allocated = (part: string) =>
      median(files.filter((f) => f.path.includes(part)).map((f) => f.allocated));
    const segmentBytes = median(segments.map((s) => s.size));
    const snapshotBytes = snapshots.at(-1)?.size ?? 0;
    printTable('Checkpoint sizes on the embedded default (budget: delta < 1 KB on disk)', [
      {
        object: `delta segment of a typical turn (median of ${segments.length})`,
        bytes: int(segmentBytes),
        'allocated on disk': int(allocated(`${sep}seg${sep}`)),
        budget: segmentBytes < 1024 ? 'met (bytes)' : 'NOT met',
      },
      { object: '  of which: ops (canonical JSON)', bytes: int(opsJson.length) },
      {
        object: '  of which: rest of the payload (baseDigest, stateDigest)',
        bytes: int(payloadJson.length - opsJson.length),
      },
      {
        object: '  of which: segment header, event framing, chain hashes',
        bytes: int(newest.size - payloadJson.length),
      },
      {
        object: `base snapshot (state of ${kb(canonicalJson(state).length)})`,
        bytes: int(snapshotBytes),
        'allocated on disk': int(allocated(`${sep}snap${sep}`)),
      },
    ]);
    console.log(
      `\nEach turn: set /turn, set /status, append a ${canonicalJson(message(1, 100)).length} B message, delete the oldest (window of 100); sizes from ObjectStore.list, allocation from stat (one file per object, ${int(allocated(`${sep}seg${sep}`))} B blocks).`,
    );
  } finally {
    local.close();
    local.remove();
  }
};

/** CPU time (user + system, this process, GC threads included) in µs since `start`. */
const cpuUsSince = (start: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(start);
  return used.user + used.system;
};

/**
 * Median CPU µs per call of `fn` over batches. CPU time rather than wall time: on a shared
 * machine the wall clock also counts the time other processes held the core.
 */
const cpuPerCall = (fn: () => unknown, perBatch: number, batches = 21): number => {
  for (let i = 0; i < perBatch; i++) fn();
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const start = process.cpuUsage();
    for (let i = 0; i < perBatch; i++) fn();
    samples.push(cpuUsSince(start) / perBatch);
  }
  return median(samples);
};

/** Wraps a store so that the CPU time spent inside its calls adds up in `spent.us`. */
const timed = <S extends object>(inner: S, spent: { us: number }): S =>
  new Proxy(inner, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const start = process.cpuUsage();
        try {
          return await value.apply(target, args);
        } finally {
          spent.us += cpuUsSince(start);
        }
      };
    },
  });

/** Per checkpoint: median CPU and wall µs, and CPU µs inside the (memory) stores. */
const checkpointCpu = async (bytes: number, window: number) => {
  const spent = { us: 0 };
  const { checkpointer } = services({
    objects: timed(new MemoryObjectStore(), spent),
    records: timed(new MemoryRecordStore(), spent),
  });
  const write = streamWriter(checkpointer, 'cpu');
  const state = agentState(bytes, window);
  await write(seedOps(state));
  let turn = 0;
  for (let i = 0; i < 20 * K; i++) await write(typicalTurn(++turn));
  const perBatch = 2 * K;
  const cpuUs: number[] = [];
  const wallUs: number[] = [];
  const storesUs: number[] = [];
  for (let b = 0; b < 21; b++) {
    spent.us = 0;
    const cpuStart = process.cpuUsage();
    const wallStart = process.hrtime.bigint();
    for (let i = 0; i < perBatch; i++) await write(typicalTurn(++turn));
    wallUs.push((elapsedMs(wallStart) * 1000) / perBatch);
    cpuUs.push(cpuUsSince(cpuStart) / perBatch);
    storesUs.push(spent.us / perBatch);
  }
  return {
    stateBytes: canonicalJson(state).length,
    cpuUs: median(cpuUs),
    wallUs: median(wallUs),
    storesUs: median(storesUs),
  };
};

const cpu = async () => {
  const small = await checkpointCpu(2_000, 12);
  const large = await checkpointCpu(50_000, 100);
  const budget = (us: number) => (us < 50 ? 'met' : `NOT met (${(us / 50).toFixed(1)}×)`);
  printTable('Server CPU per checkpoint, memory adapters, warm cache (budget: < 50 µs)', [
    ...[small, large].map((r) => {
      const best = Math.min(r.cpuUs, r.wallUs);
      return {
        state: kb(r.stateBytes),
        'CPU per checkpoint (median)': fmt(r.cpuUs),
        'wall (median)': fmt(r.wallUs),
        'CPU in the memory stores': fmt(r.storesUs),
        budget: budget(best),
        'budget, without the stores': budget(best - r.storesUs),
      };
    }),
  ]);
  const [load] = loadavg();
  console.log(
    `\nMedian of 21 batches of ${2 * K} Checkpointer.checkpoint calls, one typical turn each, after ${20 * K} warm-up calls (a base snapshot every ${K}th, amortized); CPU = process user + system time; "in the memory stores" = CPU inside ObjectStore/RecordStore calls (structuredClone, validation, etags), standing in for the real adapters' own CPU; budget judged on the lower of CPU and wall (CPU also counts V8's background GC threads, wall counts time other processes held the core). Load average ${load?.toFixed(1)} on ${availableParallelism()} cores during the run.`,
  );

  const state = agentState(50_000, 100);
  const turns = Array.from({ length: 1000 }, (_, i) => typicalTurn(i));
  let i = 0;
  const apply = cpuPerCall(() => applyOps(state, turns[i++ % turns.length] ?? []), 500);
  const json = canonicalJson(state);
  const canon = cpuPerCall(() => canonicalJson(state), 20);
  const hash = cpuPerCall(() => sha256Hex(json), 50);
  const digest = sha256Hex(json);
  const payload = { ops: typicalTurn(1), baseDigest: digest, stateDigest: digest };
  const genesis = genesisHash(T, 'cpu');
  const meta = { tenant: T, stream: 'cpu', epoch: 0, idempotencyKey: null, requestDigest: null };
  const ts = 1_700_000_000_000;
  const event = { type: DELTA_EVENT, payload: payload as never };
  const seal = cpuPerCall(
    () => encodeSegment({ ...meta, createdAt: ts }, sealBatch(1000, genesis, ts, [event])),
    100,
  );
  const total = large.cpuUs;
  const parts = [
    ['applyOps (4 ops)', apply],
    ['canonicalJson of the whole state (RFC 8785)', canon],
    ['SHA-256 of that canonical JSON (the state digest)', hash],
    ['seal the delta event (canonical payload, SHA-256) + encode its segment', seal],
    ['inside the memory stores (2 head reads, segment put, commit transaction)', large.storesUs],
  ] as const;
  const rest = parts.reduce((n, [, us]) => n - us, total);
  const share = (us: number) => `${((us / total) * 100).toFixed(0)}%`;
  printTable(`Where a checkpoint's CPU goes, ${kb(json.length)} state`, [
    ...parts.map(([step, us]) => ({ step, 'CPU (median)': fmt(us), share: share(us) })),
    {
      step: 'rest: service glue, promise hops, GC, snapshot every 25th (total − the above)',
      'CPU (median)': fmt(rest),
      share: share(rest),
    },
    { step: 'total checkpoint (from the table above)', 'CPU (median)': fmt(total), share: '100%' },
  ]);
  console.log(
    '\nThe first four steps timed in isolation (CPU time) on the same state; the state digest is SHA-256 over the full canonical JSON, so its two rows grow linearly with the state while the others stay put.',
  );
};

const hydration = async () => {
  const local = embedded();
  const counting = countingObjects(local.objects);
  const stores = { objects: counting.store, records: local.records };
  const stream = 'long';
  const rows: Array<Record<string, string | number>> = [];
  const builds: string[] = [];
  try {
    const write = streamWriter(services(stores).checkpointer, stream);
    const state = agentState(50_000, 100);
    const buildStart = process.hrtime.bigint();
    await write(seedOps(state));
    let turns = 1;
    for (const target of [100, 1_000, 10_000]) {
      const start = process.hrtime.bigint();
      const from = turns;
      for (; turns < target; turns++) await write(typicalTurn(turns));
      const ms = elapsedMs(start);
      builds.push(`${int(from)}→${int(target)} in ${(ms / 1000).toFixed(1)} s`);
      for (const [label, seq] of [
        ['head', undefined],
        [`seq ${int(target - 1)} (worst case)`, target - 1],
      ] as const) {
        const fresh = () =>
          new StateStore({ ...stores, reader: new Reader(stores), snapshotEvery: K });
        // Two unmeasured runs first: the build's writeback may still be draining.
        for (let w = 0; w < 2; w++) await fresh().hydrate(T, stream, seq);
        const samples: number[] = [];
        let gets = 0;
        let deltas = 0;
        for (let r = 0; r < 7; r++) {
          const states = fresh();
          counting.reset();
          const t0 = process.hrtime.bigint();
          const hydrated = await states.hydrate(T, stream, seq);
          samples.push(elapsedMs(t0));
          gets = counting.counts.get;
          deltas = hydrated.deltasApplied;
        }
        rows.push({
          turns: int(target),
          hydrate: label,
          'median ms': median(samples).toFixed(2),
          'objects read': gets,
          'deltas applied': deltas,
        });
      }
    }
    const totalS = elapsedMs(buildStart) / 1000;
    printTable(`Hydration on the embedded default, ${kb(canonicalJson(state).length)} state`, rows);
    console.log(
      `\nFresh Reader + StateStore per hydration, median of 7 after 2 unmeasured (OS cache warm); the head sits on a base snapshot (turns are multiples of ${K}), seq head − 1 needs the base ${K} turns back plus ${K - 1} deltas, the most any hydration applies; objects read = ObjectStore.get calls (record-store reads not counted). One stream built with typical turns: ${builds.join(', ')}; ${int(turns)} turns in ${totalS.toFixed(1)} s (${((totalS * 1000) / turns).toFixed(2)} ms/turn).`,
    );
  } finally {
    local.close();
    local.remove();
  }
};

const CHAT_TURNS = 1_000;
const chatMessage = (turn: number) => message(turn, 260);
const chatStatus = (turn: number) => (turn % 3 === 0 ? 'tool_call' : 'answered');

function* chatStates(): Generator<LangGraphTurn> {
  const messages = Array.from({ length: CHAT_TURNS }, (_, i) => chatMessage(i + 1));
  for (let turn = 1; turn <= CHAT_TURNS; turn++) {
    const state = { messages: messages.slice(0, turn), turn, status: chatStatus(turn) };
    yield { state, changed: ['messages', 'turn', 'status'] };
  }
}

const storage = async () => {
  const local = embedded();
  const lgDir = mkdtempSync(join(tmpdir(), 'hefesto-bench-lg-'));
  try {
    const write = streamWriter(services(local).checkpointer, 'chat');
    const start = process.hrtime.bigint();
    for (let turn = 1; turn <= CHAT_TURNS; turn++) {
      const msg = chatMessage(turn);
      await write([
        turn === 1
          ? { op: 'set', path: '/messages', value: [msg] }
          : { op: 'set', path: '/messages/-', value: msg },
        { op: 'set', path: '/turn', value: turn },
        { op: 'set', path: '/status', value: chatStatus(turn) },
      ]);
    }
    const hefestoMs = elapsedMs(start);
    local.close();
    const files = filesUnder(local.dir);
    const segments = files.filter((f) => f.path.includes(`${sep}seg${sep}`));
    const snapshots = files.filter((f) => f.path.includes(`${sep}snap${sep}`));
    const sqlite = files.filter((f) => f.path.includes('records.sqlite'));
    const objectBytes = sum(segments) + sum(snapshots);
    const hefestoBytes = objectBytes + sum(sqlite);
    const lgPath = join(lgDir, 'checkpoints.sqlite');
    const lg = await storeWithLangGraph(lgPath, chatStates());
    const lgAllocated = statSync(lgPath).blocks * 512;
    const finalState = canonicalJson([...chatStates()].at(-1)?.state ?? {}).length;
    printTable(`Storage after ${int(CHAT_TURNS)} turns of a growing chat history`, [
      {
        store: 'Hefesto, embedded default',
        'bytes stored': mb(hefestoBytes),
        'object bytes': mb(objectBytes),
        segments: `${mb(sum(segments))} (${segments.length})`,
        snapshots: `${mb(sum(snapshots))} (${snapshots.length})`,
        'snapshot share (objects / all)': `${pct(sum(snapshots), objectBytes)} / ${pct(sum(snapshots), hefestoBytes)}`,
        SQLite: mb(sum(sqlite)),
        'allocated on disk': mb(sum(files, 'allocated')),
        'write time': `${(hefestoMs / 1000).toFixed(1)} s`,
        'vs Hefesto': '1×',
      },
      {
        store: `LangGraph SqliteSaver (${lg.checkpoints} checkpoints)`,
        'bytes stored': mb(lg.bytes),
        'object bytes': '—',
        segments: '—',
        snapshots: '—',
        'snapshot share (objects / all)': '—',
        SQLite: mb(lg.bytes),
        'allocated on disk': mb(lgAllocated),
        'write time': `${(lg.elapsedMs / 1000).toFixed(1)} s`,
        'vs Hefesto': `${(lg.bytes / hefestoBytes).toFixed(1)}×`,
      },
    ]);
    console.log(
      `\nEach turn appends a ${canonicalJson(chatMessage(1)).length} B message and sets 2 small fields (final state ${kb(finalState)}); Hefesto: object file sizes + SQLite after closing (WAL checkpointed), base snapshot every ${K}; LangGraph: one put per turn with the full state (WAL, synchronous=${lg.synchronous}; Hefesto's SQLite runs synchronous=FULL and fsyncs each object), file size after wal_checkpoint(TRUNCATE).`,
    );
  } finally {
    local.remove();
    rmSync(lgDir, { recursive: true, force: true });
  }
};

export const runCheckpointBench = async () => {
  await deltaSizes();
  await cpu();
  await hydration();
  await storage();
};
