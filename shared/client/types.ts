/** Request and response shapes of the Hefesto REST API (see /v1/openapi.json). */

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

export interface EventInput {
  type: string;
  payload: Json;
}

export interface LedgerEvent {
  seq: number;
  ts: number;
  type: string;
  payload: Json;
  prevHash: string;
  hash: string;
}

export interface AppendResult {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
}

export interface StreamHead {
  streamId: string;
  seq: number;
  hash: string;
  stateDigest: string;
  deltas: number;
  stateSeq: number;
  createdAt: string;
  updatedAt: string;
}

export interface EventsPage {
  events: LedgerEvent[];
  next: number | null;
}

export type VerifyResult =
  | { ok: true; seq: number; hash: string }
  | { ok: false; code: 'ErrTamperedLedger'; firstBadSeq: number };

export type DeltaOp = { op: 'set'; path: string; value: Json } | { op: 'delete'; path: string };

export interface CheckpointResult {
  seq: number;
  stateDigest: string;
}

export interface StateResult {
  seq: number;
  state: { [key: string]: Json };
  stateDigest: string;
}

export interface ForkResult {
  streamId: string;
  seq: number;
  stateDigest: string;
  source: { streamId: string; seq: number; hash: string };
}

export type Scope = 'read' | 'write' | 'admin';

export interface CreatedKey {
  id: string;
  key: string;
  tenant: string;
  scopes: Scope[];
}

export interface Lease {
  owner: string;
  epoch: number;
  expiresAt: string;
  draining: boolean;
}

export interface DrainResult {
  epoch: number;
  seq: number;
  stateDigest: string;
  snapshot: boolean;
}

export type BeginResult =
  | {
      status: 'acquired' | 'unknown_outcome';
      effectKey: string;
      holder: string;
      leaseExpiresAt: number;
      attempt: number;
    }
  | { status: 'in_progress'; effectKey: string; retryAfterMs: number }
  | { status: 'completed'; effectKey: string; result: Json }
  | { status: 'failed'; effectKey: string; error: Json };

export interface EffectIntent {
  kind: string;
  intent: Json;
  compensation?: Json;
  sagaId?: string;
  leaseMs?: number;
}

export interface FinishedEffect {
  effectKey: string;
  status: 'completed' | 'failed';
  result?: Json;
  error?: Json;
}

export interface SagaCompensation {
  sagaId: string;
  compensations: Array<{
    effectKey: string;
    compensationKey: string;
    compensation: Json;
    begin: BeginResult;
  }>;
}
