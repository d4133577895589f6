/** Request and response shapes of the Hefesto REST API (see /v1/openapi.json). */

import type { SignedTreeHead } from '../domain/signed-head.js';

/**
 * A JSON value: what payloads, state and effect results are made of.
 *
 * @example
 * ```ts
 * const payload: Json = { role: 'user', text: 'hi', tags: ['a'] };
 * ```
 */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * `T` if it is made of JSON only, checked member by member, so an interface (which has no
 * index signature, and so is not a {@link Json}) fits too; functions, `undefined` values,
 * symbols and bigints do not. Used as `<T extends JsonValueOf<T>>`.
 *
 * @example
 * ```ts
 * interface Reply { text: string; tokens: number }
 * const reply = await run.observe('model', (): Reply => ({ text: 'hi', tokens: 2 }));
 * ```
 */
export type JsonCompatible<T> = { [K in keyof T]: JsonMember<T[K]> };

/**
 * The constraint of {@link JsonCompatible} values: a JSON scalar or such an object.
 *
 * @example
 * ```ts
 * const save = <T extends JsonValueOf<T>>(value: T) => run.observe('save', () => value);
 * ```
 */
export type JsonValueOf<T> = (string | number | boolean | null | object) & JsonCompatible<T>;

/**
 * A member of a {@link JsonCompatible} value: a JSON scalar, or JSON all the way down.
 *
 * @example
 * ```ts
 * type Tokens = JsonMember<number>; // number: a member JSON allows
 * ```
 */
export type JsonMember<V> = V extends Json
  ? V
  : V extends (...args: never[]) => unknown
    ? never
    : V extends object
      ? JsonCompatible<V>
      : never;

/**
 * An event to append: its type and JSON payload.
 *
 * @example
 * ```ts
 * await client.append('run-1', [{ type: 'tool.result', payload: { ok: true } } satisfies EventInput]);
 * ```
 */
export interface EventInput {
  type: string;
  payload: Json;
}

/**
 * A stored, hash-chained event as the API returns it.
 *
 * @example
 * ```ts
 * const { events } = await client.readEvents('run-1');
 * const first: LedgerEvent | undefined = events[0];
 * ```
 */
export interface LedgerEvent {
  seq: number;
  ts: number;
  type: string;
  payload: Json;
  prevHash: string;
  hash: string;
  /**
   * Event format 2 only (docs/ledger-format.md): the header fields the hash covers, the
   * payload bound by `commitment` under the stream's commitment key.
   */
  format?: 2;
  size?: number;
  commitment?: string;
}

/**
 * The answer to an append: the seqs it got and the new head.
 *
 * @example
 * ```ts
 * const { firstSeq, lastSeq, head }: AppendResult = await client.append('run-1', events);
 * ```
 */
export interface AppendResult {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
  /** The stream's incarnation (one life of it) the batch was written in. */
  incarnation?: string;
  /** The receipt: the signed tree head after the batch (docs/proofs.md). */
  treeHead?: SignedTreeHead;
}

/**
 * A stream's chain head, state digest and checkpoint count.
 *
 * @example
 * ```ts
 * const head: StreamHead = await client.getStream('run-1');
 * console.log(head.seq, head.deltas);
 * ```
 */
export interface StreamHead {
  streamId: string;
  seq: number;
  hash: string;
  stateDigest: string;
  deltas: number;
  stateSeq: number;
  createdAt: string;
  updatedAt: string;
  /** How the stream's state digests are computed: 1 (whole-state SHA-256) or 2 (Merkle). */
  digestVersion?: 1 | 2;
  /** This life of the stream (a delete and a re-create give it another). */
  incarnation?: string;
}

/**
 * A page of events; pass `next` as `from` to read on (null at the head).
 *
 * @example
 * ```ts
 * const page: EventsPage = await client.readEvents('run-1', { from: 1, limit: 100 });
 * ```
 */
export interface EventsPage {
  events: LedgerEvent[];
  next: number | null;
}

/**
 * The result of verifying a whole chain.
 *
 * @example
 * ```ts
 * const result: VerifyResult = await client.verify('run-1');
 * if (!result.ok) console.error(result.firstBadSeq);
 * ```
 */
export type VerifyResult =
  | { ok: true; seq: number; hash: string }
  | { ok: false; code: 'ErrTamperedLedger'; firstBadSeq: number };

/**
 * One operation of a delta checkpoint (RFC 6901 path).
 *
 * @example
 * ```ts
 * const ops: DeltaOp[] = [{ op: 'set', path: '/turn', value: 3 }, { op: 'delete', path: '/draft' }];
 * ```
 */
export type DeltaOp = { op: 'set'; path: string; value: Json } | { op: 'delete'; path: string };

/**
 * The answer to a checkpoint: its seq and the new state digest.
 *
 * @example
 * ```ts
 * const { seq, stateDigest }: CheckpointResult = await client.checkpoint('run-1', { ops, baseDigest });
 * ```
 */
export interface CheckpointResult {
  seq: number;
  stateDigest: string;
  /** The stream's incarnation the checkpoint was written in. */
  incarnation?: string;
  /** The receipt: the signed tree head after the checkpoint. */
  treeHead?: SignedTreeHead;
}

/**
 * The state of a stream at one seq.
 *
 * @example
 * ```ts
 * const { state }: StateResult = await client.getState('run-1', { at: 7 });
 * ```
 */
export interface StateResult {
  seq: number;
  state: { [key: string]: Json };
  stateDigest: string;
  /** The stream's state digest version (absent from servers before state v2: 1). */
  digestVersion?: 1 | 2;
}

/**
 * One value of the state, read by RFC 6901 pointer; with a proof, its Merkle path
 * (docs/state-v2.md), which {@link HefestoClient.getVerifiedValue} checks.
 *
 * @example
 * ```ts
 * const { value } = await client.getValue('run-1', '/messages/3');
 * ```
 */
export interface StateValue {
  seq: number;
  stateDigest: string;
  digestVersion: 1 | 2;
  path: string;
  value: Json;
  proof?: { v: 2; digest: string; path: string; value: Json; nodes: string[] };
}

/**
 * The answer to a fork: the new stream and where it came from.
 *
 * @example
 * ```ts
 * const fork: ForkResult = await client.fork('run-1', { newStreamId: 'run-1b', at: 7 });
 * ```
 */
export interface ForkResult {
  streamId: string;
  seq: number;
  stateDigest: string;
  source: { streamId: string; seq: number; hash: string };
}

/**
 * An API key scope.
 *
 * @example
 * ```ts
 * const scopes: Scope[] = ['read', 'write'];
 * ```
 */
export type Scope = 'read' | 'write' | 'admin';

/**
 * A new API key; `key` is shown only once.
 *
 * @example
 * ```ts
 * const { id, key }: CreatedKey = await admin.createKey({ tenant: 'acme', scopes: ['read'] });
 * ```
 */
export interface CreatedKey {
  id: string;
  key: string;
  tenant: string;
  scopes: Scope[];
}

/**
 * A stream lease: who holds it, its fencing epoch, whether it drains.
 *
 * @example
 * ```ts
 * const lease: Lease = await client.acquireLease('run-1', { owner: 'worker-a', ttlMs: 30_000 });
 * ```
 */
export interface Lease {
  owner: string;
  epoch: number;
  expiresAt: string;
  draining: boolean;
  /** While held, writes without this epoch as fencing token are refused. */
  exclusive: boolean;
}

/**
 * The answer to a drain: the released epoch and the head it left.
 *
 * @example
 * ```ts
 * const drained: DrainResult = await client.drain('run-1', { owner: 'worker-a', epoch: 3 });
 * ```
 */
export interface DrainResult {
  epoch: number;
  seq: number;
  stateDigest: string;
  snapshot: boolean;
}

/**
 * Where a side effect stands after begin.
 *
 * @example
 * ```ts
 * const begun: BeginResult = await client.beginEffect('run-1', 'pay-1', { kind: 'payment', intent: 500 });
 * if (begun.status === 'acquired') console.log('run it with', begun.holder);
 * ```
 */
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

/**
 * What a side effect is: its kind, intent, and optional compensation and saga.
 *
 * @example
 * ```ts
 * const effect: EffectIntent = { kind: 'payment', intent: { cents: 500 }, compensation: { refund: 500 }, sagaId: 'order-1' };
 * ```
 */
export interface EffectIntent {
  kind: string;
  intent: Json;
  compensation?: Json;
  sagaId?: string;
  leaseMs?: number;
}

/**
 * A completed or failed side effect.
 *
 * @example
 * ```ts
 * const done: FinishedEffect = await client.completeEffect('run-1', 'pay-1', { holder, result: { receipt: 'r1' } });
 * ```
 */
export interface FinishedEffect {
  effectKey: string;
  status: 'completed' | 'failed';
  result?: Json;
  error?: Json;
}

/**
 * The compensations of a saga, latest first, each begun as an effect of its own.
 *
 * @example
 * ```ts
 * const { compensations }: SagaCompensation = await client.compensateSaga('run-1', 'order-1');
 * ```
 */
export interface SagaCompensation {
  sagaId: string;
  compensations: Array<{
    effectKey: string;
    compensationKey: string;
    compensation: Json;
    begin: BeginResult;
  }>;
}

/**
 * Options of a write: its Idempotency-Key (generated once per call when absent, so the
 * client's own retries can never apply it twice).
 *
 * @example
 * ```ts
 * await client.append('run-1', events, { idempotencyKey: `run-1:turn-${turn}` });
 * ```
 */
export interface WriteOptions {
  /**
   * The request's Idempotency-Key; default a new one. `null` on a labelled checkpoint: none,
   * so the server keeps no idempotency record for it; the label is unique in its stream, so a
   * retry of a checkpoint that landed is refused with ErrLabelExists, which says it landed.
   */
  idempotencyKey?: string | null;
  /**
   * The stream's incarnation (one life of it: `incarnation` of an earlier answer) the write
   * applies to, sent as Hefesto-Incarnation. Default: the last one this client saw for the
   * stream, if any. If the stream was deleted since (and maybe created again), the write is
   * refused with ErrStreamRecreated and nothing is written, so a retry never lands in the new
   * life; the client then forgets the incarnation, and the next write starts from the stream
   * as it is.
   */
  incarnation?: string;
}
