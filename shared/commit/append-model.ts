import type { AppendResponse, HeadRecord } from '../chain/layout.js';
import type { StreamKeyring } from '../chain/stream-keyring.js';
import type { EventInput, SealedEvent } from '../domain/event.js';
import { payloadJsonOf } from '../domain/event.js';
import type { SegmentHeader } from '../domain/segment.js';
import type { HeadSigner } from '../domain/signed-head.js';
import { appliesOps, DELTA_EVENT, type ExpiryHint, FORK_EVENT } from '../domain/state.js';
import type { Clock, IdSource } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';

/** The shapes of the append protocol (append.ts) and the state effect of a batch. */

export type CommitStep = 'head-read' | 'segment-written' | 'committed';

/** Test hook: throw from it to simulate the process dying right after `step`. */
export type CrashHook = (step: CommitStep) => void;

export interface AppendOptions {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  /** Incarnations of new streams (HeadRecord.incarnation). Default: random UUIDs. */
  ids?: IdSource;
  crash?: CrashHook;
  /**
   * The stream keys (docs/privacy.md): with it, a new stream's events are written in event
   * format 2 (payloads encrypted, the chain over headers), and so are later appends to a
   * stream that has a key; a stream written in the clear stays so. Without it: format 1.
   */
  keyring?: StreamKeyring;
  /** Signs each append's receipt (the signed tree head after it); none: no receipts. */
  signer?: HeadSigner;
  /** A same-key request's orphan younger than this is in flight (409). Default 2000 ms. */
  inFlightGraceMs?: number;
  /** How long idempotency records are kept. Default 24 h. */
  idempotencyTtlSeconds?: number;
  /** Head races lost before giving up with ErrUnavailable. Default 16. */
  maxAttempts?: number;
  /** Segments between compaction work markers (0 = never mark). Default 16. */
  markEvery?: number;
  /** A base snapshot every K deltas (a `basedue` record at each). Default 25. */
  snapshotEvery?: number;
  /** Expiry of a new stream whose creating request names none, ms (0 = never). Default 0. */
  defaultTtlMs?: number;
  /**
   * State digest version of streams created from now on (records-v2). Default 2; 1 keeps
   * creating v1 streams (the benches compare the two; forks are v2 whatever this says).
   */
  newStreamDigestVersion?: 1 | 2;
}

export interface AppendRequest {
  tenant: string;
  stream: string;
  events: EventInput[];
  expectedSeq?: number;
  /** Checkpoints: the state digest the head must still have (else ErrDivergenceDetected). */
  expectedStateDigest?: string;
  idempotency?: { key: string; digest: string };
  /**
   * The incarnation (life) of the stream the request was first sent to (Hefesto-Incarnation):
   * any other, or a stream that is gone, is ErrStreamRecreated and nothing is written.
   */
  incarnation?: string;
  /** Retention of the stream, ms; used only when this append creates it. */
  ttlMs?: number;
  /**
   * The writer's lease epoch (Hefesto-Fencing-Token): the commit then checks the stream's
   * lease in the same transaction (epoch equal and active, and for checkpoints not
   * draining), so a stale writer's append can never land.
   */
  fence?: { epoch: number; checkpoint: boolean };
  /** The head as the caller read it just before checking the idempotency record. */
  knownHead?: ChainHead;
}

export interface AppendOutcome {
  response: AppendResponse;
  /** true when this answer is the stored result of an earlier request with the same key. */
  replayed: boolean;
  /** Delta count of the stream after this batch (absent on replays). */
  deltas?: number;
}

/**
 * What a batch does to the stream's state: the digest after its last delta or fork event,
 * and how many deltas it holds. Read from the events themselves, so that a writer rolling
 * forward someone else's segment moves the head's state exactly as its writer would have.
 */
export const stateEffect = (
  events: Array<{ seq: number; type: string; payload: () => unknown }>,
  before: StateEffect,
): StateEffect => {
  let { stateDigest, deltas, stateSeq, stateDepth } = before;
  for (const event of events) {
    if (!appliesOps(event.type) && event.type !== FORK_EVENT) continue;
    const payload = event.payload() as { stateDigest?: unknown; depth?: unknown } | null;
    if (typeof payload?.stateDigest !== 'string') continue;
    stateDigest = payload.stateDigest;
    stateSeq = event.seq;
    // A migration sets the state but is no turn: the base cadence counts deltas.
    if (event.type === DELTA_EVENT) deltas++;
    // records-v2: a v2 delta records the depth of its result; a fork or a v1 delta leaves
    // the head without one (absent means deltas mod K).
    stateDepth = typeof payload.depth === 'number' ? payload.depth : undefined;
  }
  return { stateDigest, deltas, stateSeq, ...(stateDepth === undefined ? {} : { stateDepth }) };
};

export interface StateEffect {
  stateDigest: string;
  deltas: number;
  /** Seq of the last event that set the state (delta or fork); 0 before any. */
  stateSeq: number;
  /** records-v2 `stateDepth` of the state at stateSeq, when a v2 delta recorded it. */
  stateDepth?: number;
}

export const sealedEffect = (events: SealedEvent[]) =>
  events.map((e) => ({
    seq: e.seq,
    type: e.type,
    payload: () => JSON.parse(payloadJsonOf(e)) as unknown,
  }));

export interface ChainHead extends HeadRecord {
  exists: boolean;
}

export const responseOf = (
  header: Pick<SegmentHeader, 'firstSeq' | 'lastSeq' | 'lastHash'>,
  stateDigest: string,
): AppendResponse => ({
  firstSeq: header.firstSeq,
  lastSeq: header.lastSeq,
  head: { seq: header.lastSeq, hash: header.lastHash },
  stateDigest,
});

export type CommitSegment = Pick<
  SegmentHeader,
  | 'firstSeq'
  | 'lastSeq'
  | 'prevHash'
  | 'lastHash'
  | 'idempotencyKey'
  | 'requestDigest'
  | 'createdAt'
> &
  StateEffect & {
    /** Seqs of its delta events; object size in bytes; the request's TTL (on create). */
    deltaSeqs: number[];
    /** Its labelled delta events (commit-extras.ts labelledOf). */
    labelled?: Array<{ seq: number; type: string; payload: () => unknown }>;
    /** Its events that bind pending writes (commit-extras.ts bindingsOf). */
    bindings?: Array<{ seq: number; type: string; payload: () => unknown }>;
    /** Seqs of its session-history clears (commit-extras.ts clearsOf). */
    clears?: number[];
    /** The expiry hint of its last delta (commit-extras.ts expiryOf); null: that delta has none. */
    expiry?: ExpiryHint | null;
    /** Chain hashes of its events in seq order: the tree's new leaves. */
    hashes: string[];
    size: number;
    ttlMs?: number;
    /** The stream key its events are sealed with (put on a new stream's head). */
    keyId?: string;
    /** That key's content key (in memory only): what the commit's records seal with. */
    contentKey?: Uint8Array;
  };
