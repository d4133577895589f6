/** Shapes of the checkpoint label, list, pending-write and stream-list routes (records v2). */

import type { SetRefOp } from './large-values.js';
import type { DeltaOp, Json } from './types.js';

/**
 * A checkpoint request: ops from the state whose digest is `baseDigest`, with the v2 fields.
 * Without `baseSeq` (or at the head's state) it is linear and refused with
 * ErrDivergenceDetected when the head's state moved; below it, a branch (time travel).
 *
 * @example
 * ```ts
 * const delta: CheckpointDelta = {
 *   ops: [{ op: 'set', path: '/messages/-', value: 'hi' }],
 *   baseDigest,
 *   label: '1ef4f797-8335-6428-8001-8a1503f9b875',
 *   meta: { step: 3 },
 * };
 * ```
 */
export interface CheckpointDelta {
  /** SET/DELETE ops; a large value is set by ref once uploaded ({@link SetRefOp}). */
  ops: Array<DeltaOp | SetRefOp>;
  baseDigest: string;
  stateDigest?: string;
  /** The checkpoint seq (or 0 for {}) whose state the ops apply to; default the head's. */
  baseSeq?: number;
  /** Unique in the stream (1..128 of A-Z a-z 0-9 . _ : -). */
  label?: string;
  /** Small JSON (≤ 16 KiB canonical) kept with the label. */
  meta?: Json;
  parentLabel?: string;
  /** The schema version of the state the ops yield (docs/schema-evolution.md); absent: 1. */
  schema?: number;
  /** Record it as a `hefesto.migration` from schema version `from` to `to` (ops may be empty). */
  migration?: { from: number; to: number };
  /**
   * A hint for the compactor: the entries of the object at `path` whose member `field` is a
   * time (ms), the earliest at `at`, are deleted by the compactor once expired by the server's
   * clock (docs/records-v2.md). Only when to look: the compactor decides from the state.
   */
  expiry?: { at: number; path: string; field: string };
}

/**
 * A labelled checkpoint as `GET .../checkpoints/{label}` answers it.
 *
 * @example
 * ```ts
 * const { seq, parentLabel }: CheckpointLabel = await client.getCheckpoint('run-1', label);
 * ```
 */
export interface CheckpointLabel {
  label: string;
  seq: number;
  stateDigest: string;
  meta?: Json;
  parentLabel?: string;
  parentSeq?: number;
  /** Milliseconds since the epoch. */
  createdAt: number;
}

/**
 * A page of labelled checkpoints, newest first; pass `next` as `before` to read on.
 *
 * @example
 * ```ts
 * const page: CheckpointList = await client.listCheckpoints('run-1', { limit: 10 });
 * ```
 */
export interface CheckpointList {
  checkpoints: Array<{ label: string; seq: number; meta?: Json; parentLabel?: string }>;
  next: number | null;
}

/**
 * One pending write of a task: insert-once for idx >= 0, last wins below 0.
 *
 * @example
 * ```ts
 * const write: PendingWriteInput = { idx: 0, channel: 'messages', value: ['hi'] };
 * ```
 */
export interface PendingWriteInput {
  idx: number;
  channel: string;
  /** The value; or, instead, `ref`. */
  value?: Json;
  /**
   * A large value uploaded first ({@link HefestoClient.putValue}): the stream holds its chunks
   * against the chunk GC, and a read answers the ref (read the value with `readValue`).
   */
  ref?: { hash: string; size: number };
}

/**
 * A stored pending write, with its task.
 *
 * @example
 * ```ts
 * const { writes } = await client.getPendingWrites('run-1', label);
 * const first: PendingWrite | undefined = writes[0];
 * ```
 */
export interface PendingWrite extends PendingWriteInput {
  taskId: string;
  taskPath: string;
}

/**
 * A page of a tenant's streams; pass `next` as `after` to read on (null at the end).
 *
 * @example
 * ```ts
 * const { streams, next }: StreamList = await client.listStreams({ prefix: 'lg.' });
 * ```
 */
export interface StreamList {
  streams: Array<{
    streamId: string;
    seq: number;
    /** The head's last update, ISO 8601 (a number of ms before 0.2.0: see CHANGELOG.md). */
    updatedAt: string;
    /** `expiresAt`: ISO 8601. */
    lease: { owner: string; epoch: number; draining: boolean; expiresAt: string } | null;
  }>;
  next: string | null;
}
