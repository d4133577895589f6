import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { printTable } from './harness.js';

/**
 * What binding pending writes costs (docs/ledger-format.md, "Pending writes"): a LangGraph-like
 * turn on the embedded stores (SQLite records, object files) through the services: one
 * labelled checkpoint continuing the last (it seals and binds the one it leaves), two tasks'
 * putWrites to it, a read of the tip's writes (getTuple) and of the previous checkpoint's (a
 * bound one). Storage requests per operation are counted; times are medians.
 *
 * HEFESTO_BENCH_PW_BASELINE=<another checkout> (e.g. `git archive main` unpacked, with a
 * node_modules link) runs the same turns on that tree's services too, interleaved round by
 * round with this one's, so the noise of a shared machine falls on both alike.
 * HEFESTO_BENCH_PW_TURNS (default 100) turns per round, HEFESTO_BENCH_PW_ROUNDS (default 5).
 */

const TURNS = Number(process.env.HEFESTO_BENCH_PW_TURNS ?? 100);
const ROUNDS = Number(process.env.HEFESTO_BENCH_PW_ROUNDS ?? 5);
const baseline = process.env.HEFESTO_BENCH_PW_BASELINE;

type Counts = Record<string, number>;
type Ops = 'checkpoint' | 'putWrites' | 'tip writes' | 'bound writes';

interface Tree {
  name: string;
  load: () => Promise<{
    // biome-ignore lint/suspicious/noExplicitAny: two versions of the services, loaded at run time
    Ledger: any;
    // biome-ignore lint/suspicious/noExplicitAny: as above
    LocalObjectStore: any;
    // biome-ignore lint/suspicious/noExplicitAny: as above
    LocalRecordStore: any;
  }>;
}

const treeAt = (name: string, root: string): Tree => ({
  name,
  load: async () => ({
    ...(await import(join(root, 'shared/ledger/ledger.ts'))),
    ...(await import(join(root, 'shared/adapters/local/local-object-store.ts'))),
    ...(await import(join(root, 'shared/adapters/local/local-record-store.ts'))),
  }),
});

/** Every method call of `target` counted into `counts` as `{prefix} {method}`. */
const counting = <T extends object>(target: T, prefix: string, counts: { now?: Counts }): T =>
  new Proxy(target, {
    get(t, prop) {
      const v = Reflect.get(t, prop);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const c = counts.now;
        if (c) c[`${prefix} ${String(prop)}`] = (c[`${prefix} ${String(prop)}`] ?? 0) + 1;
        return v.apply(t, args);
      };
    },
  });

const message = (i: number) =>
  `turn ${i}: ${'The quick brown fox jumps over the lazy dog while the agent weighs. '.repeat(4)}`.slice(
    0,
    270,
  );

const runRound = async (tree: Tree, times: Record<Ops, number[]>, counts: Record<Ops, Counts>) => {
  const { Ledger, LocalObjectStore, LocalRecordStore } = await tree.load();
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-pw-'));
  const objects = new LocalObjectStore({ dir: join(dir, 'objects') });
  const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
  const slot: { now?: Counts } = {};
  const ledger = new Ledger({
    objects: counting(objects, 'objects', slot),
    records: counting(records, 'records', slot),
    clock: { now: () => Date.now() },
  });
  const T = 'bench';
  const S = `pw-${Math.random().toString(36).slice(2)}`;
  const timed = async (op: Ops, fn: () => Promise<unknown>) => {
    const c: Counts = {};
    slot.now = c;
    const start = process.hrtime.bigint();
    await fn();
    times[op].push(Number(process.hrtime.bigint() - start) / 1e6);
    slot.now = undefined;
    counts[op] = c; // the last turn's (every turn but the first two asks the same)
  };
  let digest: string = (await ledger.appender.readHead(T, S)).stateDigest;
  for (let i = 0; i < TURNS; i++) {
    const label = `c${i}`;
    await timed('checkpoint', async () => {
      const res = await ledger.checkpoints.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: `/m${i % 50}`, value: message(i) }],
        baseDigest: digest,
        label,
        meta: { source: 'loop', step: i },
        ...(i > 0 ? { parentLabel: `c${i - 1}` } : {}),
      });
      digest = res.stateDigest;
    });
    for (const task of ['agent', 'tools']) {
      await timed('putWrites', () =>
        ledger.pendingWrites.put(T, S, label, {
          taskId: `${task}-${i}`,
          taskPath: `~__pregel_pull, ${task}`,
          writes: [{ idx: 0, channel: 'messages', value: [{ type: 'ai', content: message(i) }] }],
        }),
      );
    }
    await timed('tip writes', () => ledger.pendingWrites.list(T, S, label));
    if (i > 0) await timed('bound writes', () => ledger.pendingWrites.list(T, S, `c${i - 1}`));
  }
  objects.close?.();
  records.close?.();
  rmSync(dir, { recursive: true, force: true });
};

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

const main = async () => {
  const trees = [
    treeAt('this tree', resolve(import.meta.dirname, '..')),
    ...(baseline ? [treeAt('baseline', resolve(baseline))] : []),
  ];
  const ops: Ops[] = ['checkpoint', 'putWrites', 'tip writes', 'bound writes'];
  const results = trees.map((tree) => ({
    tree,
    times: Object.fromEntries(ops.map((o) => [o, [] as number[]])) as Record<Ops, number[]>,
    counts: Object.fromEntries(ops.map((o) => [o, {} as Counts])) as Record<Ops, Counts>,
  }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const res of r % 2 === 0 ? results : [...results].reverse()) {
      await runRound(res.tree, res.times, res.counts);
    }
  }
  const pair = results.length === 2;
  const p50 = (r: (typeof results)[number], op: Ops) => median(r.times[op]);
  printTable(
    `Pending-write binding: ${ROUNDS} rounds of ${TURNS} turns (embedded stores), p50`,
    ops.map((op) => ({
      operation: op,
      ...Object.fromEntries(results.map((r) => [r.tree.name, `${p50(r, op).toFixed(3)} ms`])),
      ...(pair
        ? {
            ratio: `${(p50(results[0] as never, op) / p50(results[1] as never, op)).toFixed(2)}x`,
          }
        : {}),
    })),
  );
  const fmt = (c: Counts) =>
    Object.entries(c)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || '—';
  printTable(
    'Storage requests per operation (the last turn)',
    ops.map((op) => ({
      operation: op,
      ...Object.fromEntries(results.map((r) => [r.tree.name, fmt(r.counts[op])])),
    })),
  );
};

await main();
