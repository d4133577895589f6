import type { DeltaOp } from '../shared/domain/state.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { Ledger } from '../shared/services/ledger.js';
import { readStateValue } from '../shared/services/state-read.js';
import { meteredObjects } from '../test/support/chunk-world.js';
import { typicalTurn } from './agent-workload.js';
import { printTable } from './harness.js';

/**
 * Issue 12, partial reads: `GET .../state?path=` of a 5 MiB state whose head is a chunk base,
 * in a new process each time (cold chunk cache), against a whole cold hydration of the same
 * state; then the same read once a delta lies past the base (the hydration fallback).
 */

const T = 'bench';
const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

const coldRead = async (
  objects: ObjectStore,
  records: RecordStore,
  stream: string,
  path: string,
  proof: boolean,
) => {
  const metered = meteredObjects(objects);
  const ledger = new Ledger({ objects: metered.store, records, clock: { now: () => Date.now() } });
  const t0 = process.hrtime.bigint();
  const answer = await readStateValue(ledger.states, { tenant: T, stream, path, proof });
  const ms = elapsedMs(t0);
  return { metered, ms, proofBytes: answer.proof ? JSON.stringify(answer.proof).length : 0 };
};

/** `big`: a stream whose head is a chunk base; `hydrate`: objects and ms of its cold hydration. */
export const runPathReads = async (
  objects: ObjectStore,
  records: RecordStore,
  hydrate: { objects: number; ms: number },
) => {
  const rows: Array<Record<string, string | number>> = [];
  const row = async (what: string, path: string, proof: boolean) => {
    const { metered, ms, proofBytes } = await coldRead(objects, records, 'big', path, proof);
    rows.push({
      read: what,
      path,
      'objects read': metered.m.gets,
      'chunks read': metered.m.chunkGets,
      'proof bytes': proofBytes,
      ms: ms.toFixed(1),
      'vs whole hydration (objects / ms)': `${hydrate.objects} / ${hydrate.ms.toFixed(0)}`,
    });
  };
  await row('value, head at a base', '/documents/5000', false);
  await row('value + proof, head at a base', '/documents/5000', true);
  await row('value + proof, head at a base', '/messages/50', true);
  // One delta past the base (K = 25): the read hydrates (base + delta), as documented.
  const writer = new Ledger(
    { objects, records, clock: { now: () => Date.now() } },
    { snapshotEvery: 25 },
  );
  const { stateDigest } = await writer.appender.readHead(T, 'big');
  const ops: DeltaOp[] = typicalTurn(3);
  await writer.checkpoints.checkpoint({ tenant: T, stream: 'big', ops, baseDigest: stateDigest });
  await row('value + proof, a delta past the base (fallback)', '/documents/5000', true);
  printTable('Partial reads: one path of a 5 MiB state on the emulators, cold process', rows);
  console.log(
    '\nHead at a chunk base: the root object and the chunks on the path, each verified, the root against the chain digest. With deltas past the base the read hydrates (base + deltas); a warm head state (the writing process) reads no object.',
  );
};
