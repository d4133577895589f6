import { pathToFileURL } from 'node:url';
import { MemoryObjectStore } from '../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../shared/adapters/memory/memory-record-store.js';
import { toHead } from '../shared/chain/layout.js';
import { Reader } from '../shared/chain/reader.js';
import { headKey } from '../shared/chain/storage-keys.js';
import { Appender } from '../shared/commit/append.js';
import type { EventInput } from '../shared/domain/event.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import { Ed25519Signer, KeyRing } from '../shared/ports/signer.js';
import { ProofService } from '../shared/proofs/proofs.js';
import { treeCommit } from '../shared/proofs/tree-commit.js';
import { writeTreeTiles } from '../shared/proofs/tree-tiles.js';
import { fmt, measure, measureAsync, printTable } from './harness.js';

/**
 * The verifiable ledger through the services (memory stores, so times are CPU and the
 * counts are the storage requests the same calls make on S3):
 *
 * - per-append cost of the tree: `treeCommit` (frontier update + Ed25519 signing of the
 *   receipt) against a whole append of the same batch, and their ratio, in one run;
 * - proofs at 10^3 and 10^5 events (10^6 with BENCH_PROOFS_MILLION=1: ~2,000 appends of 500
 *   through the services), the stream tiled by the compactor's tree step: inclusion and
 *   consistency latency through ProofService, proof bytes, and object GETs per proof (tiles
 *   and segments counted apart). `npx tsx bench/proofs-service.ts`.
 */

const events = (n: number, tag: string): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({
    type: 'observation',
    payload: { tag, i, text: 'x'.repeat(64) },
  }));

const counting = (inner: ObjectStore) => {
  const keys: string[] = [];
  const store: ObjectStore = {
    ...inner,
    get: (key) => {
      keys.push(key);
      return inner.get(key);
    },
    head: (k) => inner.head(k),
    list: (p, o) => inner.list(p, o),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    putIfMatch: (k, b, e) => inner.putIfMatch(k, b, e),
    delete: (k) => inner.delete(k),
  };
  return { store, keys };
};

const appendCost = async () => {
  const ring = new KeyRing(Ed25519Signer.generate());
  let now = Date.now();
  const clock = { now: () => now++ };
  const stores = { objects: new MemoryObjectStore(), records: new MemoryRecordStore({ clock }) };
  const appender = new Appender({ ...stores, clock, signer: ring.current });
  let n = 0;
  const rows = [];
  for (const size of [1, 10, 100]) {
    const append = await measureAsync(
      `append ${size}`,
      () =>
        appender.append({ tenant: 'bench', stream: `s-${size}`, events: events(size, `e${n++}`) }),
      { batches: 11, perBatch: 20 },
    );
    const item = await stores.records.get(headKey('bench', `s-${size}`));
    const head = { ...toHead(item as never), exists: true };
    const hashes = Array.from({ length: size }, (_, i) => (i % 2 ? 'ab' : 'cd').repeat(32));
    const tree = measure(
      `tree ${size}`,
      () =>
        treeCommit(head, { tenant: 'bench', stream: `s-${size}`, now: 1, hashes }, ring.current),
      { perBatch: 200 },
    );
    const unsigned = measure(
      `frontier ${size}`,
      () => treeCommit(head, { tenant: 'bench', stream: `s-${size}`, now: 1, hashes }, undefined),
      { perBatch: 200 },
    );
    rows.push({
      'events per append': size,
      'append (memory stores)': fmt(append.medianUs),
      'tree: frontier + signing': fmt(tree.medianUs),
      'tree: frontier only': fmt(unsigned.medianUs),
      'tree share of the append': `${((tree.medianUs / append.medianUs) * 100).toFixed(1)} %`,
      'append without the tree (derived)': fmt(append.medianUs - tree.medianUs),
    });
  }
  printTable('Tree cost per append (median; the tree adds no storage request)', rows);
};

const proofs = async (sizes: number[]) => {
  const rows = [];
  for (const n of sizes) {
    const ring = new KeyRing(Ed25519Signer.generate());
    let now = Date.now();
    const clock = { now: () => now++ };
    const objects = new MemoryObjectStore();
    const records = new MemoryRecordStore({ clock });
    const appender = new Appender({ objects, records, clock, signer: ring.current });
    for (let done = 0; done < n; done += 500) {
      await appender.append({
        tenant: 'bench',
        stream: 's',
        events: events(Math.min(500, n - done), `b${done}`),
      });
    }
    const reader = new Reader({ objects, records });
    await writeTreeTiles({ objects, records, reader }, { tenant: 'bench', stream: 's' });
    // 7 more events after the compactor's visit: the untiled tail a proof reads from segments.
    await appender.append({ tenant: 'bench', stream: 's', events: events(7, 'tail') });
    const size = n + 7;
    const c = counting(objects);
    const service = new ProofService({
      objects: c.store,
      records,
      reader: new Reader({ objects: c.store, records }),
      clock,
      signing: ring,
    });
    const per = (fn: () => Promise<unknown>) => async () => {
      c.keys.length = 0;
      const out = await fn();
      return {
        out,
        tiles: c.keys.filter((k) => k.includes('/tile/')).length,
        segments: c.keys.filter((k) => k.includes('/seg/')).length,
      };
    };
    const inc = per(() => service.inclusion('bench', 's', Math.floor(n / 3), size));
    const incTail = per(() => service.inclusion('bench', 's', size, size));
    const con = per(() => service.consistency('bench', 's', Math.floor(n / 2), size));
    const conTiled = per(() => service.consistency('bench', 's', Math.floor(n / 2), n));
    const [i1, i2, c1, c2] = [await inc(), await incTail(), await con(), await conTiled()];
    const tInc = await measureAsync('inc', inc, { batches: 7, perBatch: 10, warmup: 3 });
    const tCon = await measureAsync('con', con, { batches: 7, perBatch: 10, warmup: 3 });
    const gets = (x: { tiles: number; segments: number }) => `${x.tiles} tiles + ${x.segments} seg`;
    rows.push({
      events: size,
      'inclusion: latency': fmt(tInc.medianUs),
      'inclusion: bytes': Buffer.byteLength(JSON.stringify(i1.out)),
      'inclusion: GETs': gets(i1),
      'inclusion of the tail: GETs': gets(i2),
      'consistency: latency': fmt(tCon.medianUs),
      'consistency: bytes': Buffer.byteLength(JSON.stringify(c1.out)),
      'consistency: GETs (to head)': gets(c1),
      'consistency: GETs (within tiles)': gets(c2),
    });
  }
  printTable(
    'Proofs through ProofService (memory stores; head read and checked against the chain end each call; tiles by the compactor, 7 events after)',
    rows,
  );
};

export const runProofsServiceBench = async (): Promise<void> => {
  await appendCost();
  await proofs(
    process.env.BENCH_PROOFS_MILLION === '1' ? [1_000, 100_000, 1_000_000] : [1_000, 100_000],
  );
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runProofsServiceBench();
