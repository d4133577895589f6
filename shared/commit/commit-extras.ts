import { headMismatch } from '../chain/chain-head.js';
import {
  baseDueKey,
  dueKey,
  markerKey,
  segmentIndexKey,
  streamIndexKey,
} from '../chain/storage-keys.js';
import { bindingOf, leavesOf } from '../chain/writes-binding.js';
import { genesisHash } from '../domain/event.js';
import { hintOf } from '../domain/expiry-hint.js';
import { appliesOps, DELTA_EVENT, type ExpiryHint, FORK_EVENT } from '../domain/state.js';
import type { JsonValue, TransactOp } from '../ports/record-store.js';
import { labelOps } from './labels.js';
import { bindingOps } from './writes-ops.js';

/**
 * What an append's commit transaction writes for compaction and retention, besides the head,
 * the segment index and the idempotency record. Written in the same transaction, so that no
 * crash can leave work the compactor does not know about:
 *
 * - `pending` on the head counts segments since the stream's last work marker; the commit
 *   that brings it to `markEvery` puts the marker (compact#{shard}, one per stream) and
 *   resets it. The compactor reads markers, never scans streams.
 * - a commit holding the K-th, 2K-th... delta puts a `basedue#{seq}` record: a base snapshot
 *   is due there. The checkpointer writes it and clears the record; if it dies first, the
 *   compactor finds the record and writes the base.
 * - the commit that creates a stream stamps its expiry (the request's TTL, else the
 *   deployment default) and schedules the compactor's visit at that time, and puts the
 *   stream's record in its tenant's stream index (stream-list.ts).
 * - a labelled delta puts its checkpoint label (`notExists`: unique in the stream) and list
 *   records (labels.ts), and the head counts `labels`.
 * - a delta leaving a labelled checkpoint freezes its writes (`writesFrozen` on its label
 *   record); an event binding a checkpoint's writes (a delta's `pendingWrites`, a
 *   `hefesto.writes` event) sets that label record's `writesSeq`, and the event's writes are
 *   put (writes-ops.ts bindingOps).
 * - a session history's clear (a delta with `clear: true`) sets the head's `clearedSeq` and
 *   schedules the compactor's visit now: the chain is cut there (clear-cut.ts) by the clear's
 *   request, or by that visit if the request dies first.
 * - a batch whose last state-setting delta carries an `expiry` hint (domain/expiry-hint.ts)
 *   schedules the compactor's visit at the hint's time, unless one is scheduled already
 *   (`expiryDueAt` on the head) after now and no later; the visit reads the verified state
 *   and decides (compact-expiry.ts), so a hint early or late changes when, never what.
 */

export interface CommitExtrasOptions {
  /** Segments between work markers; 0 = never mark. */
  markEvery: number;
  /** A base snapshot every K deltas. */
  snapshotEvery: number;
  /** Expiry of new streams when the request names none; 0 = keep forever. */
  defaultTtlMs: number;
}

export interface CommitExtras {
  /** Attributes to set on the head (also on the head a create puts). */
  head: Record<string, JsonValue>;
  ops: TransactOp[];
  /** The label puts among `ops`: a conflict at one of them is a duplicate label. */
  labelPuts: Set<TransactOp>;
}

/** An event of a batch with its payload read lazily (append-model.ts). */
export type BatchEvent = { seq: number; type: string; payload: () => unknown };

/** Seqs of the delta events of a batch, in order (same rule as stateEffect). */
export const deltaSeqsOf = (
  events: Array<{ seq: number; type: string; payload: () => unknown }>,
): number[] =>
  events
    .filter(
      (e) =>
        e.type === DELTA_EVENT &&
        typeof (e.payload() as { stateDigest?: unknown } | null)?.stateDigest === 'string',
    )
    .map((e) => e.seq);

/** The delta events of a batch that carry a checkpoint label. */
export const labelledOf = (events: BatchEvent[]): BatchEvent[] =>
  events.filter(
    (e) =>
      e.type === DELTA_EVENT &&
      typeof (e.payload() as { label?: unknown } | null)?.label === 'string',
  );

/** Seqs of the session-history clears of a batch (deltas recording `clear: true`). */
export const clearsOf = (events: BatchEvent[]): number[] =>
  events
    .filter(
      (e) => e.type === DELTA_EVENT && (e.payload() as { clear?: unknown } | null)?.clear === true,
    )
    .map((e) => e.seq);

/**
 * The expiry hint of the batch's last state-setting event: undefined, the batch sets no
 * state; null, that event carries none (or one that is not a hint).
 */
export const expiryOf = (events: BatchEvent[]): ExpiryHint | null | undefined => {
  const last = events.findLast((e) => appliesOps(e.type) || e.type === FORK_EVENT);
  if (!last) return undefined;
  return (last.type !== FORK_EVENT && hintOf(last.payload())) || null;
};

/** The events of a batch that freeze or bind a checkpoint's pending writes (writes-binding.ts). */
export const bindingsOf = (events: BatchEvent[]): BatchEvent[] =>
  events.filter((e) => {
    const event = { type: e.type, payload: e.payload() };
    return bindingOf(event) !== undefined || leavesOf(event) !== undefined;
  });

export const commitExtras = (
  options: CommitExtrasOptions,
  at: {
    tenant: string;
    stream: string;
    now: number;
    /** The head before this commit (absent fields: an older record, count from 0). */
    head: {
      exists: boolean;
      pending?: number;
      deltas: number;
      labels?: number;
      expiryDueAt?: number;
    };
    lastSeq: number;
    deltaSeqs: number[];
    /** The batch's delta events that carry a label (labelledOf). */
    labelled?: BatchEvent[];
    /** The batch's events that bind pending writes (bindingsOf). */
    bindings?: BatchEvent[];
    /** Seqs of the batch's session-history clears (clearsOf). */
    clears?: number[];
    /** The expiry hint of the batch's last state-setting event (expiryOf). */
    expiry?: ExpiryHint | null;
    /** The request's TTL, used only when this commit creates the stream. */
    ttlMs?: number;
    /** The stream's content key when it is sealed at rest: bound writes are stored sealed. */
    contentKey?: Uint8Array;
  },
): CommitExtras => {
  const { tenant, stream, now, head } = at;
  const ops: TransactOp[] = [];
  const baseDue: number[] = [];
  let deltas = head.deltas;
  for (const seq of at.deltaSeqs) {
    deltas++;
    if (deltas % options.snapshotEvery === 0) baseDue.push(seq);
  }
  for (const seq of baseDue) {
    ops.push({ kind: 'put', item: { ...baseDueKey(tenant, stream, seq), seq } });
  }
  const pending = (head.exists ? (head.pending ?? 0) : 0) + 1;
  const mark = options.markEvery > 0 && (pending >= options.markEvery || baseDue.length > 0);
  if (mark) {
    ops.push({
      kind: 'put',
      item: { ...markerKey(tenant, stream), tenant, stream, seq: at.lastSeq, markedAt: now },
    });
  }
  const fields: Record<string, JsonValue> = { pending: mark ? 0 : pending };
  const labelled = labelOps(tenant, stream, at.labelled ?? [], now);
  const labelPuts = new Set(labelled.filter((op) => op.kind === 'put' && op.conditions));
  if (labelled.length > 0) {
    fields.labels = (head.exists ? (head.labels ?? 0) : 0) + labelPuts.size;
    ops.push(...labelled);
  }
  ops.push(...bindingOps(tenant, stream, at.bindings ?? [], at.contentKey));
  const cleared = at.clears?.at(-1);
  if (cleared !== undefined) {
    fields.clearedSeq = cleared;
    ops.push({ kind: 'put', item: { ...dueKey(tenant, stream, now), tenant, stream } });
  }
  if (at.expiry) {
    const due = head.exists ? head.expiryDueAt : undefined;
    // A visit already coming, no later than this hint, reads the state then and schedules
    // the next from it: another would only repeat it.
    if (!(due !== undefined && due > now && due <= at.expiry.at)) {
      fields.expiryDueAt = at.expiry.at;
      ops.push({ kind: 'put', item: { ...dueKey(tenant, stream, at.expiry.at), tenant, stream } });
    }
  }
  if (!head.exists) {
    ops.push({ kind: 'put', item: { ...streamIndexKey(tenant, stream), createdAt: now } });
  }
  const ttlMs = at.ttlMs ?? options.defaultTtlMs;
  if (!head.exists && ttlMs > 0) {
    fields.expiresAt = now + ttlMs;
    ops.push({
      kind: 'put',
      item: { ...dueKey(tenant, stream, now + ttlMs), tenant, stream },
    });
  }
  return { head: fields, ops, labelPuts };
};

/**
 * The commit's anchor on the chain end: the index record of the segment ending at the head's
 * seq must still end at the head's hash, so a head whose hash was edited can never be chained
 * onto (a condition of the commit transaction, not an extra read). A head pruned up to its
 * seq has no such record; its hash must be the one recorded at the pruning point, which the
 * head itself holds: checked before the commit, and `undefined` here.
 */
export const chainEndCheck = (
  tenant: string,
  stream: string,
  head: { exists: boolean; seq: number; hash: string; prunedSeq?: number; prunedHash?: string },
): TransactOp | undefined => {
  if (!head.exists) return undefined;
  if (head.seq === 0) {
    // A head before any event (a lease barrier creates one): no segment to anchor on, and the
    // only hash it may hold is the stream's genesis.
    if (head.hash !== genesisHash(tenant, stream))
      throw headMismatch(head, 'the head is not genesis');
    return undefined;
  }
  if (head.prunedSeq !== undefined && head.prunedSeq >= head.seq) {
    if (head.prunedHash !== head.hash) throw headMismatch(head, 'the head is not the pruning hash');
    return undefined;
  }
  return {
    kind: 'check',
    key: segmentIndexKey(tenant, stream, head.seq),
    conditions: [{ op: 'eq', attr: 'lastHash', value: head.hash }],
  };
};
