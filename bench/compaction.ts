import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalObjectStore } from '../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../shared/adapters/local/local-record-store.js';
import {
  SEGMENT_INDEX_PREFIX,
  streamObjectPrefix,
  streamPk,
} from '../shared/chain/storage-keys.js';
import { Compactor } from '../shared/compaction/compactor.js';
import { Ledger } from '../shared/ledger/ledger.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { fmt, printTable } from './harness.js';
import { payloadOfSize } from './ledger.js';

/**
 * Compaction on the embedded default (files + SQLite): a stream of 10,000 single-event appends
 * (200 B payloads), before and after compaction: objects and bytes stored for it, index
 * records, and the time to read (and verify) the whole stream; and how fast the compactor
 * merges (events per second, one pass, default 4 MiB target), and deletes what it superseded
 * once the grace period has passed.
 */

const T = 'bench';
const S = 'stream';
const EVENTS = 10_000;

const stored = async (objects: ObjectStore, prefix: string) => {
  let count = 0;
  let bytes = 0;
  let after: string | undefined;
  do {
    const page = await objects.list(prefix, { after });
    for (const item of page.items) {
      count++;
      bytes += item.size;
    }
    after = page.next;
  } while (after !== undefined);
  return { count, bytes };
};

const indexRecords = async (records: RecordStore) => {
  let n = 0;
  let after: string | undefined;
  do {
    const page = await records.query(streamPk(T, S), { skPrefix: SEGMENT_INDEX_PREFIX, after });
    n += page.items.length;
    after = page.next;
  } while (after !== undefined);
  return n;
};

const time = async <R>(fn: () => Promise<R>): Promise<{ us: number; result: R }> => {
  const start = process.hrtime.bigint();
  const result = await fn();
  return { us: Number(process.hrtime.bigint() - start) / 1000, result };
};

export const runCompactionBench = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-bench-compact-'));
  const objects = new LocalObjectStore({ dir });
  const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  try {
    const ledger = new Ledger({ objects, records, clock });
    const payload = payloadOfSize(200);
    for (let i = 0; i < EVENTS; i++) {
      await ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'observation', payload: { ...payload, turn: i } }],
      });
    }
    const readAll = async () => {
      let from: number | undefined;
      let n = 0;
      do {
        const page = await ledger.reader.readEvents(T, S, { from, limit: 1000 });
        n += page.events.length;
        from = page.next;
      } while (from !== undefined);
      const verified = await ledger.reader.verify(T, S);
      if (n !== EVENTS || !verified.ok) throw new Error('bench stream did not read back whole');
    };
    const state = async (label: string) => ({
      label,
      ...(await stored(objects, streamObjectPrefix(T, S))),
      index: await indexRecords(records),
      read: (await time(readAll)).us,
    });
    const before = await state('before compaction');

    let n = 0;
    const graceMs = 600_000;
    const compactor = new Compactor({
      objects,
      records,
      clock,
      ids: { newId: () => `bench-${++n}` },
      states: ledger.states,
      graceMs,
      maxRunMs: 600_000,
    });
    const merged = await time(() => compactor.run());
    const during = await state('merged (superseded objects kept for the grace period)');
    offset += graceMs * 2;
    const collected = await time(() => compactor.run());
    const after = await state('after the grace period');

    const row = (s: typeof before) => ({
      stream: s.label,
      objects: s.count,
      'object bytes': s.bytes.toLocaleString('en-US'),
      'index records': s.index,
      'read + verify all': fmt(s.read),
    });
    printTable(
      `Compaction: ${EVENTS.toLocaleString('en-US')} single-event appends (200 B payloads), embedded stores`,
      [row(before), row(during), row(after)],
    );
    const report = merged.result;
    printTable('Compaction throughput (one pass, 4 MiB target)', [
      {
        'segments merged': report.segmentsMerged,
        'segments written': report.segmentsWritten,
        'bytes before → after': `${report.bytesBefore.toLocaleString('en-US')} → ${report.bytesAfter.toLocaleString('en-US')}`,
        'merge pass': fmt(merged.us),
        'events / s': Math.round(EVENTS / (merged.us / 1e6)).toLocaleString('en-US'),
        'objects deleted after grace': collected.result.objectsDeleted,
        'delete pass': fmt(collected.us),
        'read speed-up': `${(before.read / after.read).toFixed(1)}x`,
      },
    ]);
    return { before, during, after, merged: report };
  } finally {
    records.close();
    objects.close();
    rmSync(dir, { recursive: true, force: true });
  }
};
