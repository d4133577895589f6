import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { genesisHash, hashLedgerEvent, type LedgerEvent } from '../../shared/domain/event.js';
import {
  applyOps,
  type DeltaOp,
  type JsonObject,
  MIGRATION_EVENT,
} from '../../shared/domain/state.js';
import { digestOfState, emptyStateDigest } from '../../shared/domain/state-digest.js';
import { schemaVersionOf } from '../../shared/domain/state-schema.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { Ledger } from '../../shared/ledger/ledger.js';

/**
 * test/vectors/schema-migration.json against the domain code the server runs: the chain from
 * the genesis hash, every state the ops make and its digest, the schema version the format
 * rule gives after each event; and the server's checkpoint service, sent the same requests
 * under the same clock, writes the very same events (hashes included). The client SDK checks
 * the same file: test/client/schema-migration-vectors.test.ts.
 */

interface Run {
  name: string;
  tenant: string;
  stream: string;
  genesis: string;
  events: LedgerEvent[];
  states: JsonObject[];
  versions: number[];
}

const { runs } = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/schema-migration.json'), 'utf8'),
) as { runs: Run[] };

type Payload = {
  ops: DeltaOp[];
  baseDigest: string;
  stateDigest: string;
  schema?: number;
  from?: number;
  to?: number;
};

describe.each(runs.map((r) => [r.name, r] as const))('schema-migration vector: %s', (_, run) => {
  it('chains from the genesis of its tenant and stream, each hash from its fields', () => {
    expect(genesisHash(run.tenant, run.stream)).toBe(run.genesis);
    expect(run.events[0]?.prevHash).toBe(run.genesis);
    for (const e of run.events) expect(hashLedgerEvent(e)).toBe(e.hash);
    expect(verifyEvents(run.events, { seq: 0, hash: run.genesis }).ok).toBe(true);
  });

  it('makes each state from the last by the event’s ops, with the digest it records', () => {
    let state: JsonObject = {};
    let digest = emptyStateDigest(2);
    for (const [i, e] of run.events.entries()) {
      const p = e.payload as Payload;
      expect(p.baseDigest).toBe(digest);
      state = applyOps(structuredClone(state), p.ops);
      expect(state).toEqual(run.states[i]);
      digest = digestOfState(state, 2);
      expect(p.stateDigest).toBe(digest);
    }
  });

  it('holds one migration, from the version before it to the one after, and the rule gives each version', () => {
    const migrations = run.events.filter((e) => e.type === MIGRATION_EVENT);
    expect(migrations).toHaveLength(1);
    const m = migrations[0] as LedgerEvent;
    const p = m.payload as Payload;
    expect(p.from).toBe(run.versions[m.seq - 2]);
    expect(p.to).toBe(run.versions[m.seq - 1]);
    expect((p.from ?? 0) < (p.to ?? 0)).toBe(true);
    expect(run.events.map((e) => schemaVersionOf(e))).toEqual(run.versions);
  });

  it('is what the server writes for the same requests under the same clock', async () => {
    const clock = { now: () => run.events[0]?.ts ?? 0 };
    const ledger = new Ledger({
      objects: new MemoryObjectStore(),
      records: new MemoryRecordStore({ clock }),
      clock,
    });
    for (const e of run.events) {
      const p = e.payload as Payload;
      await ledger.checkpoints.checkpoint({
        tenant: run.tenant,
        stream: run.stream,
        ops: p.ops,
        baseDigest: p.baseDigest,
        stateDigest: p.stateDigest,
        ...(p.schema === undefined ? {} : { schema: p.schema }),
        ...(e.type === MIGRATION_EVENT ? { migration: { from: p.from ?? 1, to: p.to ?? 1 } } : {}),
      });
    }
    const written = await ledger.reader.readEvents(run.tenant, run.stream, { from: 1 });
    expect(written.events.map((e: LedgerEvent) => e.hash)).toEqual(run.events.map((e) => e.hash));
  });
});
