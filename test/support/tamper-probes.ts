import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import type { TamperedObject } from '../../shared/chain/tampered.js';
import { objectOf } from '../../shared/chain/tampered.js';
import type { HefestoClient } from '../../shared/client/client.js';
import { TamperedHistoryError } from '../../shared/client/proofs.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import { HefestoError, TamperedLedgerError } from '../../shared/domain/errors.js';
import type { Ledger } from '../../shared/ledger/ledger.js';
import { readStateValue } from '../../shared/state/state-read.js';
import { runCliHere } from '../cli/in-process.js';
import {
  appOf,
  F,
  httpClient,
  J,
  JF,
  LABELS,
  O,
  REF_PATH,
  ROOT,
  S,
  T,
  type TamperWorld,
} from './tamper-world.js';

/**
 * The detectors of the tamper matrix (test/support/tamper-matrix-suite.ts), each run by a
 * new process's worth of state (a new ledger, a new app: no cache of an earlier read):
 *
 * - `reads`: every read the server answers from the tampered streams, each either exactly
 *   what it answered before the tampering or ErrTamperedLedger (naming its object), never
 *   another value and never another error;
 * - `verify`: `/verify` of the tampered streams;
 * - `trusted`: a verifying client whose trust store holds the stream's signed head;
 * - `audit`: `hefesto audit STREAM --witness`, on a machine that trusted nothing before.
 */

/** What one read answered: its value (as JSON), or its error. */
export type Answer =
  | { value: string }
  | { tampered: TamperedObject; message: string }
  | { error: string; message: string };

const answer = async (read: () => Promise<unknown>): Promise<Answer> => {
  try {
    // Canonical: a state hydrated from another base holds its keys in another order.
    const value = JSON.parse(JSON.stringify((await read()) ?? null)) as JsonValue;
    return { value: canonicalJson(value) };
  } catch (err) {
    if (err instanceof TamperedLedgerError) {
      return { tampered: objectOf(err).object, message: err.message };
    }
    if (err instanceof HefestoError) return { error: err.code, message: err.message };
    return { error: (err as Error).name, message: String((err as Error).message) };
  }
};

const allEvents = async (ledger: Ledger, stream: string) => {
  const out: unknown[] = [];
  let from: number | undefined;
  for (;;) {
    const page = await ledger.reader.readEvents(T, stream, { from, limit: 7 });
    out.push(...page.events);
    if (page.next === undefined) return out;
    from = page.next;
  }
};

const allCheckpoints = async (ledger: Ledger, stream: string) => {
  const out: unknown[] = [];
  let before: number | undefined;
  for (;;) {
    const page = await ledger.labels.list(T, stream, { limit: 2, before });
    out.push(...page.checkpoints);
    if (page.next === null || page.next === undefined) return out;
    before = page.next;
  }
};

const hydrated = async (ledger: Ledger, stream: string, seq?: number) => {
  const h = await ledger.states.hydrate(T, stream, seq);
  return { seq: h.seq, stateDigest: h.stateDigest, hash: h.hash, state: h.state };
};

/**
 * Reads a documented limit leaves unverified (docs/ledger-format.md, "Storage kinds and the
 * tamper matrix"), by the kind whose limit it is: `GET /v1/streams` lists the stream index
 * and serves each head's seq and time and its writer lease as stored. The matrix does not
 * hold them to "as before or failed closed"; the limit's own case checks what it says.
 */
export const LIMITED_READS: Record<string, string> = { streams: 'stream-index' };

/** Every read of the battery, by name. */
export const readBattery = (
  world: TamperWorld,
): Record<string, (l: Ledger) => Promise<unknown>> => {
  const reads: Record<string, (l: Ledger) => Promise<unknown>> = {};
  for (const stream of [S, F, J, JF]) {
    reads[`events ${stream}`] = (l) => allEvents(l, stream);
    reads[`state ${stream}`] = (l) => hydrated(l, stream);
  }
  for (const label of LABELS) {
    const seq = world.seqs[label] as number;
    reads[`state ${S} at ${label}`] = (l) => hydrated(l, S, seq);
    reads[`checkpoint ${label}`] = (l) => l.labels.get(T, S, label);
  }
  reads[`state ${J} at 2`] = (l) => hydrated(l, J, 2);
  reads[`checkpoints ${S}`] = (l) => allCheckpoints(l, S);
  for (const path of [REF_PATH, '/k1', '/k9']) {
    reads[`value ${path}`] = (l) =>
      readStateValue(l.states, { tenant: T, stream: S, path, proof: true });
  }
  reads[`value ${REF_PATH} at c4`] = (l) =>
    readStateValue(l.states, { tenant: T, stream: S, path: REF_PATH, at: world.seqs.c4 });
  reads['fork origin'] = (l) => l.states.forkOrigin(T, F);
  reads['tree head'] = (l) => l.proofs.treeHead(T, S);
  reads['inclusion of 1'] = (l) => l.proofs.inclusion(T, S, 1);
  reads['inclusion of c5'] = (l) => l.proofs.inclusion(T, S, world.seqs.c5 as number);
  reads['consistency from 3'] = (l) => l.proofs.consistency(T, S, 3);
  reads['pending writes c2'] = (l) => l.pendingWrites.list(T, S, 'c2');
  // Bound after the early backup (c5 left it, c6 bound it): a rollback of its label shows.
  reads['pending writes c4'] = (l) => l.pendingWrites.list(T, S, 'c4');
  // A retry of a finished effect: its stored outcome, checked against its event (writes nothing).
  reads['effect pay-1'] = (l) =>
    l.effects.begin({
      tenant: T,
      stream: S,
      effectKey: 'pay-1',
      kind: 'payment',
      intent: { amount: 5 },
    });
  reads.streams = (l) => l.streamList.list(T);
  return reads;
};

export const runReads = async (world: TamperWorld): Promise<Record<string, Answer>> => {
  const out: Record<string, Answer> = {};
  for (const [name, read] of Object.entries(readBattery(world))) {
    out[name] = await answer(() => read(world.ledger()));
  }
  return out;
};

/** `/verify` of every stream a case may touch. */
export const runVerify = async (world: TamperWorld) => {
  const out: Record<string, unknown> = {};
  for (const stream of [S, O, F, J, JF]) {
    const r = await world.ledger().verifier.verify(T, stream);
    out[stream] = r.ok ? { ok: true } : { ok: false, object: r.object };
  }
  return out;
};

export interface ClientProbe {
  /** A verifying client whose trust store trusted the honest history (its signed head). */
  trusted(): HefestoClient;
  /** The verified reads a new process makes, each answered or refused. */
  run(): Promise<Record<string, Answer | { history: string }>>;
}

export const clientProbe = async (world: TamperWorld): Promise<ClientProbe> => {
  const trustStore = new MemoryTrustStore();
  const client = (verify: boolean) => httpClient(world, verify ? trustStore : undefined);
  await client(true).readEvents(S, { limit: 1000 });
  const reads = (c: HefestoClient): Record<string, () => Promise<unknown>> => ({
    readEvents: () => c.readEvents(S, { limit: 1000 }),
    getState: () => c.getState(S),
    verifyLocally: () => c.verifyLocally(S),
  });
  return {
    trusted: () => client(true),
    run: async () => {
      const out: Record<string, Answer | { history: string }> = {};
      for (const [name, read] of Object.entries(reads(client(true)))) {
        try {
          await read();
          out[name] = { value: 'ok' };
        } catch (err) {
          out[name] =
            err instanceof TamperedHistoryError
              ? { history: err.reason }
              : { error: String((err as { code?: unknown }).code), message: String(err) };
        }
      }
      return out;
    },
  };
};

export interface AuditProbe {
  /** `hefesto audit S --witness W` from a machine with an empty trust file. */
  run(stream?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

export const auditProbe = async (world: TamperWorld): Promise<AuditProbe> => {
  const server: ServerType = serve({
    fetch: (req) => appOf(world).fetch(req),
    port: 0,
    hostname: '127.0.0.1',
  });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    run: async (stream = S) => {
      const dir = mkdtempSync(join(tmpdir(), 'hefesto-matrix-trust-'));
      try {
        return await runCliHere(['audit', stream, '--witness', world.witnessArg], {
          HEFESTO_URL: url,
          HEFESTO_KEY: ROOT,
          HEFESTO_TRUST_FILE: join(dir, 'trust.json'),
          HEFESTO_S3_FORCE_PATH_STYLE: 'true',
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
};
