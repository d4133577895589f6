import type { DeltaOp } from '../shared/domain/state.js';
import { Ledger } from '../shared/ledger/ledger.js';
import type { ObjectStore } from '../shared/ports/object-store.js';
import type { RecordStore } from '../shared/ports/record-store.js';
import { readStateValue } from '../shared/state/state-read.js';
import { meteredObjects } from '../test/support/chunk-world.js';
import { typicalTurn } from './agent-workload.js';
import { printTable } from './harness.js';

/**
 * Issue 12, partial reads: `GET .../state?path=` of a 5 MiB state whose head is a chunk base,
 * in a new process each time (cold chunk cache), against a whole cold hydration of the same
 * state; then the same read once typical turns lie past the base (replayed on a partial tree).
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
  // Typical turns past the base (K = 25): replayed on a partial tree (state-v2/partial.ts).
  const writer = new Ledger(
    { objects, records, clock: { now: () => Date.now() } },
    { snapshotEvery: 25 },
  );
  const turn = async (n: number) => {
    const { stateDigest } = await writer.appender.readHead(T, 'big');
    const ops: DeltaOp[] = typicalTurn(n);
    await writer.checkpoints.checkpoint({ tenant: T, stream: 'big', ops, baseDigest: stateDigest });
  };
  await turn(3);
  await row('value + proof, 1 typical turn past the base', '/documents/5000', true);
  for (let n = 4; n <= 13; n++) await turn(n);
  await row('value + proof, 11 typical turns past the base', '/documents/5000', true);
  await row('value + proof, 11 typical turns past the base', '/messages/50', true);
  printTable('Partial reads: one path of a 5 MiB state on the emulators, cold process', rows);
  console.log(
    '\nHead at a chunk base: the root object and the chunks on the path, each verified, the root against the chain digest. Turns past the base: their segments, then a partial tree loading the containers their ops edit (here the 100-message window) and the path; each turn re-hashed to its recorded digest. A warm head state (the writing process) reads no object.',
  );
};
