import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import { readIndex } from '../shared/compaction/compact-types.js';
import { Compactor } from '../shared/compaction/compactor.js';
import { Ledger } from '../shared/ledger/ledger.js';
import { fmt, printTable } from './harness.js';

/**
 * Compaction passes to convergence (issue 22): one stream of 1,572 small appended batches (the
 * segments a 500-invoke LangGraph run leaves), on the embedded stores, compacted by passes as
 * `hefesto compact` runs them (a fresh compactor each, back to back) until a pass reports
 * `more: false`: with the default settings, and with the 1 s grace of the LangGraph bench
 * (its lease, grace / 4, was what bounded a visit before). Budget: at most 3 passes.
 */

const T = 'bench';
const S = 'stream';
const SEGMENTS = Number(process.env.HEFESTO_BENCH_SEGMENTS ?? 1_572);

const converge = async (label: string, graceMs: number | undefined) => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-passes-'));
  const objects = new LocalObjectStore({ dir });
  const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
  const clock = { now: () => Date.now() };
  try {
    const ledger = new Ledger({ objects, records, clock });
    for (let i = 0; i < SEGMENTS; i++) {
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'observation', payload: { turn: i, text: 'x'.repeat(2_000) } }],
      });
    }
    let n = 0;
    const passes: Array<{ merged: number; more: boolean; us: number }> = [];
    for (let pass = 0; pass < 50; pass++) {
      const compactor = new Compactor({
        objects,
        records,
        clock,
        ids: { newId: () => `bench-${++n}` },
        states: ledger.states,
        ...(graceMs === undefined ? {} : { graceMs }),
        maxRunMs: 50_000,
      });
      const start = process.hrtime.bigint();
      const report = await compactor.run();
      const us = Number(process.hrtime.bigint() - start) / 1000;
      passes.push({ merged: report.segmentsMerged, more: report.more, us });
      if (!report.more) break;
    }
    const left = (await readIndex(records, T, S)).length;
    return {
      settings: label,
      segments: SEGMENTS,
      'passes to convergence': passes.length,
      'segments merged per pass': passes.map((p) => p.merged).join(', '),
      'segments left': left,
      'time (all passes)': fmt(passes.reduce((t, p) => t + p.us, 0)),
      'within budget (≤ 3)': passes.length <= 3 ? 'yes' : 'NO',
    };
  } finally {
    records.close();
    objects.close();
    rmSync(dir, { recursive: true, force: true });
  }
};

export const runCompactionPassesBench = async () => {
  const rows = [
    await converge('defaults (grace 600 s)', undefined),
    await converge('grace 1 s (lease 250 ms)', 1_000),
  ];
  printTable(
    `Compaction passes to convergence: ${SEGMENTS} segments on one stream, embedded stores`,
    rows,
  );
  return rows;
};

if (import.meta.url === `file://${process.argv[1]}`) await runCompactionPassesBench();
