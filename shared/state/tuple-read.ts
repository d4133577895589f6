import type { Reader } from '../chain/reader.js';
import { eventsIn, setsState } from '../chain/state-binding.js';
import type {
  CheckpointEntry,
  CheckpointLabels,
  LabelRecord,
  ListCheckpointsOptions,
} from '../commit/labels.js';
import { NotFoundError, PrunedError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { DELTA_EVENT, type DeltaOp, type DeltaPayload, type JsonObject } from '../domain/state.js';
import { type DigestVersion, digestVersionOf, emptyStateDigest } from '../domain/state-digest.js';
import type { MemoryAccount } from './memory-pool.js';
import type { PendingWrite, PendingWrites } from './pending-writes.js';
import type { StateStore } from './state.js';

/**
 * A checkpoint with its state and pending writes in one read (`GET .../tuple`, what a
 * LangGraph saver's getTuple needs), conditional on the state the caller holds:
 *
 *   - `unchanged`: the caller's `since` (seq and state digest) is the checkpoint's state;
 *     nothing of the state is sent;
 *   - `deltas`: the caller's state is an earlier state of the same line (every state-setting
 *     event after it up to the checkpoint is a delta on the one before, with no value set by
 *     ref, at most MAX_DELTAS of them): their ops, in order, which turn it into this one;
 *   - `state`: otherwise (nothing held, a branch, a fork, a pruned or far past): the state.
 *
 * Bound as every read (docs/ledger-format.md, "Binding rule"): the checkpoint's list entry is
 * checked against its delta, read verified from the chain; `since` is compared with the digest
 * the verified event at its seq records, the deltas are those verified events' ops, and the
 * state is hydrated and re-hashed as GET .../state does. The writes are checked as GET
 * .../writes checks them. A tampered event, entry or write is ErrTamperedLedger.
 */

/** Deltas answered at most; past that the state is cheaper to send than to replay. */
export const MAX_DELTAS = 64;

export interface TupleRequest {
  tenant: string;
  stream: string;
  /** The checkpoint; default: the head's state (whatever it is, labelled or not). */
  label?: string;
  /** The state the caller holds: its seq and digest. */
  since?: { seq: number; stateDigest: string };
  memory?: MemoryAccount;
}

export interface TupleDelta {
  seq: number;
  ops: DeltaOp[];
}

export interface TupleAnswer {
  seq: number;
  stateDigest: string;
  digestVersion: DigestVersion;
  head: { seq: number; hash: string };
  /** Its label record; null when the state read is not a labelled checkpoint. */
  checkpoint: LabelRecord | null;
  answer: 'unchanged' | 'deltas' | 'state';
  deltas?: TupleDelta[];
  state?: JsonObject;
  /** The checkpoint's pending writes (none without a checkpoint). */
  writes: PendingWrite[];
}

/** One checkpoint of a page: its state whole, or the deltas from the older one before it. */
export interface PageTuple {
  checkpoint: CheckpointEntry;
  seq: number;
  stateDigest: string;
  writes: PendingWrite[];
  state?: JsonObject;
  deltas?: TupleDelta[];
}

export interface TuplePage {
  digestVersion: DigestVersion;
  /** Newest first; the oldest has its state whole. */
  tuples: PageTuple[];
  next?: number;
}

/** Events a page reads at most to answer its checkpoints as deltas of one another. */
const MAX_PAGE_EVENTS = 1000;

const payloadOf = (event: LedgerEvent) => event.payload as Partial<DeltaPayload> | null;

/** The ops that turn the state at `from` into the state at the last event, if they do. */
const deltasAfter = (events: LedgerEvent[], from: number): TupleDelta[] | undefined => {
  const out: TupleDelta[] = [];
  let at = from;
  for (const event of events) {
    if (event.seq <= from || !setsState(event.type)) continue;
    const p = payloadOf(event);
    if (event.type !== DELTA_EVENT || !Array.isArray(p?.ops)) return undefined;
    if (p.baseSeq !== undefined && p.baseSeq !== at) return undefined; // a branch
    // A value set by ref is not in the ops: the state is sent instead.
    if (p.ops.some((op) => 'ref' in op)) return undefined;
    out.push({ seq: event.seq, ops: p.ops });
    at = event.seq;
  }
  return out;
};

export class TupleReader {
  constructor(
    readonly deps: {
      reader: Reader;
      states: StateStore;
      labels: CheckpointLabels;
      pendingWrites: PendingWrites;
    },
  ) {}

  async read(req: TupleRequest): Promise<TupleAnswer> {
    const { reader, states, labels, pendingWrites } = this.deps;
    const { tenant, stream } = req;
    const head = await reader.head(tenant, stream);
    const floor = head.prunedSeq ?? 0;
    const version = digestVersionOf(head);
    let seq: number;
    if (req.label !== undefined) {
      seq = (await labels.get(tenant, stream, req.label)).seq;
      if (seq <= floor) throw new PrunedError(stream, floor);
    } else seq = head.stateSeq;
    // The event at the checkpoint, and back to `since` when deltas may answer it: one read.
    const since = req.since;
    const near =
      since !== undefined && since.seq > floor && since.seq <= seq && seq - since.seq <= MAX_DELTAS;
    const from = near ? since.seq : seq;
    // The tip's: on to the head (near), which checking its writes reads too.
    const to = seq === head.stateSeq && head.seq - seq <= MAX_DELTAS ? head.seq : seq;
    const events = seq === 0 ? [] : await eventsIn(reader, tenant, stream, from, to);
    const own = events.find((e) => e.seq === seq);
    if (seq > 0 && (own?.seq !== seq || !setsState(own.type))) {
      throw new NotFoundError(`stream ${stream} has no state at seq ${seq}`);
    }
    const stateDigest = own ? String(payloadOf(own)?.stateDigest) : emptyStateDigest(version);
    const checkpoint = own ? ((await labels.ofEvent(tenant, stream, own)) ?? null) : null;
    const writes = checkpoint
      ? await pendingWrites.list(tenant, stream, checkpoint.label, { head, events })
      : [];
    const base = {
      seq,
      stateDigest,
      digestVersion: version,
      head: { seq: head.seq, hash: head.hash },
      checkpoint,
      writes,
    };
    if (since && since.seq === seq && since.stateDigest === stateDigest) {
      return { ...base, answer: 'unchanged' };
    }
    const first = events[0];
    if (near && first?.seq === since.seq && setsState(first.type)) {
      const held = payloadOf(first)?.stateDigest === since.stateDigest;
      const line = events.filter((e) => e.seq <= seq);
      const deltas = held ? deltasAfter(line, since.seq) : undefined;
      if (deltas) return { ...base, answer: 'deltas', deltas };
    }
    if (seq === 0) return { ...base, answer: 'state', state: {} };
    const hydrated = await states.hydrate(tenant, stream, seq, { memory: req.memory });
    return { ...base, stateDigest: hydrated.stateDigest, answer: 'state', state: hydrated.state };
  }

  /**
   * A page of the checkpoint list (labels.list: newest first, checked complete against the
   * chain) with each checkpoint's writes and state: the oldest's whole, each newer one as the
   * deltas from the one before it when it is on the same line (else whole too), so a page of a
   * long thread sends one state and the few ops each step added.
   */
  async page(
    tenant: string,
    stream: string,
    options: ListCheckpointsOptions & { beforeLabel?: string; memory?: MemoryAccount },
  ): Promise<TuplePage> {
    const { reader, states, labels, pendingWrites } = this.deps;
    const head = await reader.head(tenant, stream);
    const before =
      options.beforeLabel === undefined
        ? options.before
        : (await labels.get(tenant, stream, options.beforeLabel)).seq;
    const listed = await labels.list(tenant, stream, { ...options, before });
    const entries = listed.checkpoints;
    const version = digestVersionOf(head);
    const out: TuplePage = {
      digestVersion: version,
      tuples: [],
      ...(listed.next === undefined ? {} : { next: listed.next }),
    };
    if (entries.length === 0) return out;
    const low = (entries.at(-1) as CheckpointEntry).seq;
    const high = (entries[0] as CheckpointEntry).seq;
    // The events the page spans, to answer deltas; a page spread too far reads its own events.
    const contiguous = high - low < MAX_PAGE_EVENTS;
    const events = contiguous
      ? await eventsIn(reader, tenant, stream, low, high)
      : (
          await Promise.all(entries.map((e) => eventsIn(reader, tenant, stream, e.seq, e.seq)))
        ).flat();
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    const writes = await Promise.all(
      entries.map((e) => pendingWrites.list(tenant, stream, e.label, { head, events })),
    );
    const tuples: PageTuple[] = [];
    // Oldest first: each one's deltas are from the one before it.
    for (let i = entries.length - 1; i >= 0; i--) {
      const entry = entries[i] as CheckpointEntry;
      const event = bySeq.get(entry.seq);
      const stateDigest = String(event && payloadOf(event)?.stateDigest);
      const older = tuples.at(-1);
      const range =
        older && contiguous ? events.filter((e) => e.seq > older.seq && e.seq <= entry.seq) : [];
      const deltas = older && range.length > 0 ? deltasAfter(range, older.seq) : undefined;
      const base = { checkpoint: entry, seq: entry.seq, stateDigest, writes: writes[i] ?? [] };
      if (deltas && deltas.at(-1)?.seq === entry.seq && deltas.length <= MAX_DELTAS) {
        tuples.push({ ...base, deltas });
        continue;
      }
      const hydrated = await states.hydrate(tenant, stream, entry.seq, { memory: options.memory });
      tuples.push({ ...base, stateDigest: hydrated.stateDigest, state: hydrated.state });
    }
    out.tuples = tuples.reverse();
    return out;
  }
}
