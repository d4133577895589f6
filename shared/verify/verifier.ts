import { headMismatch } from '../chain/chain-head.js';
import { badCheckpoint, checkEntry } from '../chain/label-binding.js';
import { type HeadRecord, type SnapshotIndexRecord, toSnapshotIndex } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { badBase, bindBase, HeadStateCheck, setsState } from '../chain/state-binding.js';
import {
  CKPT_PREFIX,
  LABEL_PREFIX,
  labelOfSk,
  SNAPSHOT_INDEX_PREFIX,
  snapshotIndexKey,
  streamPk,
} from '../chain/storage-keys.js';
import { objectOf, type TamperedObject, TamperedObjectError } from '../chain/tampered.js';
import { bindingOf, leavesOf, writesBoundOf } from '../chain/writes-binding.js';
import type { JsonValue } from '../domain/canonical.js';
import { TamperedLedgerError } from '../domain/errors.js';
import {
  genesisHash,
  type LedgerEvent,
  payloadJsonOf,
  type SealedEvent,
  toLedgerEvent,
} from '../domain/event.js';
import { mapLimit } from '../domain/map-limit.js';
import { WRITES_EVENT, type WritesBinding } from '../domain/pending-writes.js';
import { decodeAnySnapshot, type SnapshotExpectation } from '../domain/snapshot.js';
import { DELTA_EVENT, type DeltaOp, FORK_EVENT, type ForkPayload } from '../domain/state.js';
import { type DigestVersion, digestVersionOf, emptyStateDigest } from '../domain/state-digest.js';
import { DEFAULT_WORK_BUDGET } from '../domain/state-v2/index.js';
import { isEffectEvent, verifyEffects } from '../effects/effect-binding.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { ChunkStore } from '../state/chunk-store.js';
import { openSnapshot } from '../state/snapshot-seal.js';
import { ChunkSnapshots } from '../state/snapshot-v2.js';
import { hasRefs, ValueStore } from '../state/values.js';
import { verifyWrites } from '../state/writes-verify.js';

/**
 * /verify: every object a read depends on, checked against what the trusted records say.
 *
 *   1. The base snapshot records of the stream are listed (before the head is read: a
 *      snapshot written after that is not judged, like a segment committed after it).
 *   2. The chain is verified from genesis or the pruning point to the head (Reader), and the
 *      head against its end. On the way, the chain hash at every snapshot's seq is kept, and
 *      the first event; only the segments that hold one are decoded past their hashes.
 *   3. Each snapshot from the pruning point to the head: its record must name the chain hash
 *      at its seq, and its object must decode, name this stream, seq and hash, and hash to
 *      its state digest. An object missing while its record is gone too was pruned meanwhile.
 *   4. A fork (first event `hefesto.fork`, not pruned): the origin snapshot it names must
 *      decode to the state digest it records.
 *   5. The head's state, the checkpoint list and labels (label-binding.ts), every
 *      checkpoint's pending writes (writes-verify.ts), the finished effects against their
 *      events (effect-binding.ts), and the values set by ref after the newest base.
 * The answer names the first bad object: `segment` (with the first bad seq), `head`,
 * `snapshot`, `fork-origin`, `checkpoint`, `pending-writes`, `effect` or `value` (with the
 * seq it stands for).
 */

export type LedgerVerifyResult =
  | { ok: true; seq: number; hash: string }
  | {
      ok: false;
      code: 'ErrTamperedLedger';
      firstBadSeq: number;
      object: TamperedObject;
      /** The seq the bad object stands for (0: a fork's origin). */
      seq: number;
      /** Diagnostics for logs; may name storage keys, so not for API answers. */
      reason: string;
    };

export interface VerifierOptions {
  objects: ObjectStore;
  records: RecordStore;
  reader: Reader;
  /** Snapshot objects fetched at once. Default 4. */
  concurrency?: number;
}

/** A snapshot of either format, fully read: v2 reads and verifies every chunk it names. */
const checkAnySnapshot = async (
  snapshots: ChunkSnapshots,
  body: Uint8Array,
  expect: SnapshotExpectation,
): Promise<void> => {
  const decoded = decodeAnySnapshot(body, expect);
  if ('root' in decoded) {
    await snapshots.readRoot(expect.tenant, '\u0000verify', decoded.root, expect);
  }
};

const badSnapshot = (seq: number, why: string, cause?: unknown) =>
  new TamperedObjectError(
    'snapshot',
    { firstBadSeq: Math.max(seq, 1), seq },
    `base snapshot at seq ${seq}: ${why}`,
    cause === undefined ? undefined : { cause },
  );

/** A delta or fork of the verified chain, as the bindings need it. */
interface StateEvent {
  seq: number;
  digest: unknown;
  /** A delta that sets a value by ref. */
  refs: boolean;
  /** A labelled delta: the event itself, for the checks of its records. */
  labelled?: LedgerEvent;
  /** The pending writes it binds, and the checkpoint it left (writes-binding.ts). */
  binding?: WritesBinding;
  leaves?: string;
}

/** A format 2 event read without its key: its header is verified, its payload is absent. */
const isSealed = (event: SealedEvent): boolean =>
  event.preimage[0] === 2 && event.payloadText === undefined;

const stateEventOf = (event: SealedEvent): StateEvent => {
  const payload = JSON.parse(payloadJsonOf(event)) as {
    stateDigest?: unknown;
    ops?: unknown;
    label?: unknown;
  };
  const ops = Array.isArray(payload.ops) ? payload.ops : [];
  const labelled =
    event.type === DELTA_EVENT && typeof payload.label === 'string'
      ? toLedgerEvent(event)
      : undefined;
  const binding = bindingOf({ type: event.type, payload });
  const leaves = leavesOf({ type: event.type, payload });
  return {
    seq: event.seq,
    digest: payload.stateDigest,
    refs: hasRefs(ops),
    labelled,
    binding,
    leaves,
  };
};

export class Verifier {
  readonly #o: Required<VerifierOptions>;

  constructor(options: VerifierOptions) {
    this.#o = { ...options, concurrency: options.concurrency ?? 4 };
  }

  /** A chunk reader with an empty cache: verification reads what storage holds now. */
  #snapshots(): ChunkSnapshots {
    const { objects, records } = this.#o;
    const chunks = new ChunkStore({ objects, records, clock: { now: () => Date.now() } });
    return new ChunkSnapshots(chunks, objects, records);
  }

  async verify(tenant: string, stream: string): Promise<LedgerVerifyResult> {
    try {
      return await this.#verify(tenant, stream);
    } catch (err) {
      if (!(err instanceof TamperedLedgerError)) throw err;
      const { object, seq } = objectOf(err);
      const { firstBadSeq, message: reason } = err;
      return { ok: false, code: 'ErrTamperedLedger', firstBadSeq, object, seq, reason };
    }
  }

  async #verify(tenant: string, stream: string): Promise<LedgerVerifyResult> {
    const snapshots = await this.#snapshotRecords(tenant, stream);
    const isWanted = new Set([1, ...snapshots.map((s) => s.seq)]);
    const hashes = new Map<number, string>();
    // Every delta and fork of the kept chain: what bases and the head are bound to.
    const stateEvents: StateEvent[] = [];
    let first: SealedEvent | undefined;
    // `hefesto.writes` events: pending writes bound after their checkpoint was left.
    const lateWrites: Array<WritesBinding & { seq: number }> = [];
    const effectEvents: LedgerEvent[] = [];
    let sealed = false;
    const { head, start, end } = await this.#o.reader.verifyChain(tenant, stream, {
      decode: () => ({}),
      visit: (segment, entry) => {
        if (isWanted.has(entry.lastSeq)) hashes.set(entry.lastSeq, entry.lastHash);
        for (const event of segment.events) {
          if (isWanted.has(event.seq)) hashes.set(event.seq, event.hash);
          if (isSealed(event)) {
            sealed = true;
            continue;
          }
          if (event.seq === 1) first = event;
          if (setsState(event.type)) stateEvents.push(stateEventOf(event));
          else if (isEffectEvent(event.type)) effectEvents.push(toLedgerEvent(event));
          else if (event.type === WRITES_EVENT) {
            const payload = JSON.parse(payloadJsonOf(event)) as unknown;
            const binding = bindingOf({ type: event.type, payload });
            if (binding) lateWrites.push({ ...binding, seq: event.seq });
          }
        }
      },
    });
    hashes.set(start.seq, start.hash);
    // Without the stream's key (docs/privacy.md): the chain of headers, its index and its
    // head are verified above; the records bound to content (bases, labels, writes, effects,
    // values) need the payloads, which only a key holder can bind.
    if (sealed) return { ok: true, ...end };
    const events = stateEvents.filter((e) => e.seq <= head.seq);

    const floor = head.prunedSeq ?? 0;
    const version = digestVersionOf(head);
    const judged = snapshots.filter((s) => s.seq >= floor && s.seq <= head.seq);
    // A stream sealed at rest whose key this server opens: its bases open with it.
    const contentKey = (await this.#o.reader.sealedKeys(tenant, stream, head))?.keys.content;
    const failures = await mapLimit(judged, this.#o.concurrency, (record) =>
      this.#checkSnapshot(tenant, stream, record, hashes.get(record.seq), version, contentKey)
        .then(() => this.#checkBinding(tenant, stream, head, record, events))
        .then(
          () => undefined,
          (err: unknown) => err,
        ),
    );
    // The lowest bad seq, whichever fetch failed first.
    const failure = failures.find((f) => f !== undefined);
    if (failure !== undefined) throw failure;
    if (floor === 0 && first?.type === FORK_EVENT)
      await this.#checkForkOrigin(tenant, stream, first, version);
    await this.#checkHeadState(tenant, stream, head, events);
    await this.#checkCheckpoints(tenant, stream, floor, events);
    await this.#checkWrites(tenant, stream, head, events, lateWrites);
    await verifyEffects(this.#o.records, tenant, stream, {
      floor,
      headSeq: head.seq,
      events: effectEvents.filter((e) => e.seq <= head.seq),
    });
    const newestBase = judged.at(-1)?.seq ?? 0;
    await this.#checkValues(
      tenant,
      stream,
      events.filter((e) => e.refs && e.seq > newestBase),
    );
    return { ok: true, ...end };
  }

  /** A base is bound to the chain as reads bind it (state-binding.ts), from the walk's events. */
  async #checkBinding(
    tenant: string,
    stream: string,
    head: HeadRecord,
    record: SnapshotIndexRecord,
    events: StateEvent[],
  ): Promise<void> {
    const floor = head.prunedSeq ?? 0;
    const stateSeq = record.stateSeq;
    if (stateSeq === undefined) {
      // Written before stateSeq was kept: bound by its own event when that is a checkpoint
      // (readers skip any other); at the pruning point, by its hash only.
      const own = events.find((e) => e.seq === record.seq);
      if (own && own.digest !== record.stateDigest) {
        throw badBase(record.seq, 'is not the state its event records');
      }
      return;
    }
    if (stateSeq <= floor && stateSeq > 0) {
      // Below the pruning point: through the kept segments, as reads do.
      await bindBase(this.#o.reader, tenant, stream, head, record);
      return;
    }
    if (stateSeq > record.seq) throw badBase(record.seq, `its stateSeq ${stateSeq} is after it`);
    const last = events.filter((e) => e.seq <= record.seq).at(-1);
    if (stateSeq === 0) {
      if (record.stateDigest !== emptyStateDigest(digestVersionOf(head))) {
        throw badBase(record.seq, 'is not the empty state its stateSeq 0 names');
      }
      if (last) throw badBase(record.seq, `a delta lies before it (seq ${last.seq})`);
      return;
    }
    if (last?.seq !== stateSeq) {
      throw badBase(
        record.seq,
        last && last.seq > stateSeq
          ? `a delta lies between its stateSeq ${stateSeq} and its seq`
          : `its stateSeq ${stateSeq} is not a delta or a fork`,
      );
    }
    if (last.digest !== record.stateDigest) {
      throw badBase(record.seq, `is not the state seq ${stateSeq} records`);
    }
  }

  /**
   * The checkpoint list and labels against the labelled deltas above the pruning point
   * (label-binding.ts): each entry is what its delta committed, each labelled delta has its
   * entry and its label record naming its seq (a deleted or edited record is reported).
   */
  async #checkCheckpoints(
    tenant: string,
    stream: string,
    floor: number,
    events: StateEvent[],
  ): Promise<void> {
    const deltas = new Map<number, LedgerEvent>();
    for (const e of events) if (e.labelled) deltas.set(e.seq, e.labelled);
    const entries = await this.#records(tenant, stream, CKPT_PREFIX);
    const listed = new Set<number>();
    for (const item of entries.reverse()) {
      const seq = Number(item.seq);
      if (seq <= floor) continue;
      const claim = {
        label: String(item.label),
        seq,
        ...(typeof item.stateDigest === 'string' ? { stateDigest: item.stateDigest } : {}),
        ...(typeof item.metaJson === 'string'
          ? { meta: JSON.parse(item.metaJson) as JsonValue }
          : item.meta === undefined
            ? {}
            : { meta: item.meta as JsonValue }),
        ...(typeof item.parentLabel === 'string' ? { parentLabel: item.parentLabel } : {}),
        ...(typeof item.parentSeq === 'number' ? { parentSeq: item.parentSeq } : {}),
      };
      checkEntry(claim, deltas.get(seq));
      listed.add(seq);
    }
    const labels = new Map<string, number>();
    for (const item of await this.#records(tenant, stream, LABEL_PREFIX)) {
      labels.set(labelOfSk(item.sk), Number(item.seq));
    }
    for (const [seq, event] of deltas) {
      if (!listed.has(seq)) throw badCheckpoint(seq, 'its list entry is missing');
      const label = (event.payload as { label: string }).label;
      if (labels.get(label) !== seq)
        throw badCheckpoint(seq, `its label record ${label} is not its`);
    }
  }

  /** Every checkpoint's pending writes against their binding (writes-verify.ts). */
  async #checkWrites(
    tenant: string,
    stream: string,
    head: HeadRecord,
    events: StateEvent[],
    lateWrites: Array<WritesBinding & { seq: number }>,
  ): Promise<void> {
    const floor = head.prunedSeq ?? 0;
    const labelled = new Map<number, { label: string; writesBound: boolean }>();
    const bindings: Array<WritesBinding & { seq: number }> = [...lateWrites];
    for (const e of events) {
      if (e.seq <= floor) continue;
      if (e.binding) bindings.push({ ...e.binding, seq: e.seq });
      if (!e.labelled) continue;
      const { label } = e.labelled.payload as { label: string };
      labelled.set(e.seq, { label, writesBound: writesBoundOf(e.labelled) });
    }
    bindings.sort((a, b) => a.seq - b.seq);
    const tip = events.at(-1);
    const chain = {
      floor,
      headSeq: head.seq,
      stateSeq: tip?.seq ?? 0,
      ...(tip?.leaves === undefined ? {} : { tipLeaves: tip.leaves }),
      labelled,
      bindings,
    };
    const keys = await this.#o.reader.sealedKeys(tenant, stream, head);
    await verifyWrites(
      this.#o.records,
      tenant,
      stream,
      { ...chain, bindings: bindings.filter((b) => b.seq > floor && b.seq <= head.seq) },
      { seq: head.seq, contentKey: keys?.keys.content },
    );
  }

  /** Every record of the stream under an sk prefix. */
  async #records(tenant: string, stream: string, skPrefix: string): Promise<Item[]> {
    const out: Item[] = [];
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), { skPrefix, after });
      out.push(...page.items);
      after = page.next;
    } while (after !== undefined);
    return out;
  }

  /** The head's stateSeq and digest are the chain's last checkpoint's. */
  async #checkHeadState(
    tenant: string,
    stream: string,
    head: HeadRecord,
    events: StateEvent[],
  ): Promise<void> {
    const last = events.at(-1);
    if (!last && (head.prunedSeq ?? 0) > 0) {
      await new HeadStateCheck(this.#o.reader).check(tenant, stream, head);
      return;
    }
    const seq = last?.seq ?? 0;
    const digest = last ? last.digest : emptyStateDigest(digestVersionOf(head));
    if (head.stateSeq !== seq || head.stateDigest !== digest) {
      throw headMismatch(head, `the head's state is not the chain's (last checkpoint: seq ${seq})`);
    }
  }

  /**
   * Values set by ref in the deltas after the newest base (no base holds them yet): every
   * chunk is read and checked against its hash, as hydration will (a missing or flipped
   * chunk would fail every state read).
   */
  async #checkValues(tenant: string, stream: string, deltas: StateEvent[]): Promise<void> {
    if (deltas.length === 0) return;
    const values = new ValueStore(this.#snapshots().chunks, this.#o.objects);
    for (const delta of deltas) {
      const [event] = (
        await this.#o.reader.readEvents(tenant, stream, { from: delta.seq, limit: 1 })
      ).events;
      const ops = (event?.payload as { ops?: DeltaOp[] } | undefined)?.ops ?? [];
      try {
        const measured = await values.measureRefs(tenant, ops, {
          budget: DEFAULT_WORK_BUDGET,
          seq: delta.seq,
        });
        await values.readRefs(tenant, ops, measured);
      } catch (err) {
        if (!(err instanceof TamperedLedgerError)) throw err;
        throw new TamperedObjectError(
          'value',
          { firstBadSeq: delta.seq, seq: delta.seq },
          `a value the delta at seq ${delta.seq} sets by ref: ${err.message}`,
          { cause: err },
        );
      }
    }
  }

  /** Every snapshot index record of the stream, lowest seq first. */
  async #snapshotRecords(tenant: string, stream: string): Promise<SnapshotIndexRecord[]> {
    const out: SnapshotIndexRecord[] = [];
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), {
        skPrefix: SNAPSHOT_INDEX_PREFIX,
        after,
      });
      for (const item of page.items) out.push(toSnapshotIndex(item));
      after = page.next;
    } while (after !== undefined);
    return out.reverse(); // keys hold INV - seq: stored highest seq first
  }

  async #checkSnapshot(
    tenant: string,
    stream: string,
    record: SnapshotIndexRecord,
    chainHash: string | undefined,
    digestVersion: DigestVersion,
    contentKey: Uint8Array | undefined,
  ): Promise<void> {
    if (chainHash === undefined) throw badSnapshot(record.seq, 'the chain does not hold its seq');
    if (record.hash !== chainHash) throw badSnapshot(record.seq, 'names another chain hash');
    const stored = await this.#o.objects.get(record.objectKey);
    if (!stored) {
      const still = await this.#o.records.get(snapshotIndexKey(tenant, stream, record.seq));
      if (!still) return; // pruned since it was listed
      throw badSnapshot(record.seq, 'its object is missing');
    }
    try {
      const where = { tenant, stream, key: record.objectKey, seq: record.seq };
      await checkAnySnapshot(this.#snapshots(), openSnapshot(stored.body, where, contentKey), {
        tenant,
        stream,
        ...record,
        hash: chainHash,
        digestVersion,
      });
    } catch (err) {
      if (err instanceof TamperedLedgerError) throw badSnapshot(record.seq, err.message, err);
      throw err;
    }
  }

  async #checkForkOrigin(
    tenant: string,
    stream: string,
    first: SealedEvent,
    digestVersion: DigestVersion,
  ): Promise<void> {
    const bad = (why: string, cause?: unknown) =>
      new TamperedObjectError(
        'fork-origin',
        { firstBadSeq: 1, seq: 0 },
        `fork origin: ${why}`,
        cause === undefined ? undefined : { cause },
      );
    const payload = JSON.parse(payloadJsonOf(first)) as Partial<ForkPayload>;
    if (payload.root !== undefined && typeof payload.stateDigest === 'string') {
      try {
        const expect = { seq: 0, stateDigest: payload.stateDigest, digestVersion };
        await this.#snapshots().readRoot(tenant, '\u0000verify', payload.root, expect);
        return;
      } catch (err) {
        if (err instanceof TamperedLedgerError) throw bad(err.message, err);
        throw err;
      }
    }
    if (typeof payload.snapshotKey !== 'string' || typeof payload.stateDigest !== 'string') {
      throw bad('the fork event names no origin snapshot');
    }
    const stored = await this.#o.objects.get(payload.snapshotKey);
    if (!stored) throw bad('its snapshot is missing');
    try {
      await checkAnySnapshot(this.#snapshots(), stored.body, {
        tenant,
        stream,
        seq: 0,
        stateDigest: payload.stateDigest,
        hash: genesisHash(tenant, stream),
        digestVersion,
      });
    } catch (err) {
      if (err instanceof TamperedLedgerError) throw bad(err.message, err);
      throw err;
    }
  }
}
