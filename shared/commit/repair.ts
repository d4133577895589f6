import { firstIndexRecord } from '../chain/chain-head.js';
import { type HeadRecord, toHead, toSegmentIndex, toSnapshotIndex } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import {
  headKey,
  SNAPSHOT_INDEX_PREFIX,
  segmentIndexKey,
  snapshotIndexKey,
  streamPk,
  witnessKey,
} from '../chain/storage-keys.js';
import { ConflictError, StreamNotFoundError, TamperedLedgerError } from '../domain/errors.js';
import { genesisHash } from '../domain/event.js';
import { DELTA_EVENT, EMPTY_STATE_DIGEST, FORK_EVENT } from '../domain/state.js';
import { type DigestVersion, digestVersionOf, emptyStateDigest } from '../domain/state-digest.js';
import { EMPTY_STATE_DIGEST_V2 } from '../domain/state-v2/index.js';
import type { ChainPoint } from '../domain/verify.js';
import type { Clock } from '../ports/clock.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';
import { extendTree, type TreeState, treeFields } from '../proofs/tree-commit.js';
import { type StateEffect, sealedEffect, stateEffect } from './append-model.js';

/**
 * Operator repair of a stream's chain head (`hefesto repair STREAM`, or
 * `POST /v1/streams/{streamId}/repair` with an admin key): rebuilds the head from the
 * verified segments when it was deleted, or when its fields no longer match the chain (its
 * hash edited). Reads and appends of such a stream answer ErrTamperedLedger until then.
 *
 *   1. Read the head. Marked `deleting` (retention): ErrStreamNotFound, nothing to repair.
 *   2. Find where the chain starts: the head's pruning point; with no head, genesis when the
 *      first index record starts at seq 1, else the pruning point that record and the base
 *      snapshot written there agree on (anything else is refused: history would be lost).
 *   3. Walk every index record from there, verifying each segment and its link (a gap, a
 *      broken link or a bad byte is ErrTamperedLedger: nothing is repaired), and recompute
 *      the head's seq, hash, state digest, delta count and state seq from the events.
 *   4. Write the head: a new one (condition: still none), or the recomputed fields over the
 *      stored one (condition: seq and hash as read), keeping its epoch and retention.
 *      Dies before 4: nothing changed; run it again.
 * An uncommitted segment at head+1 left by an append that chained on an edited head (its
 * commit refused) is not deleted here: the next append replaces it (isStrandedOrphan in
 * chain-head.ts), so the API never needs to delete objects.
 *
 * The Merkle tree is rebuilt with the head when the chain starts at genesis (its frontier
 * from the verified events; the witness is told the stream moved). After a pruning point the
 * leaves below it are gone: the head's tree fields are dropped and the compactor's backfill
 * rebuilds them from the stream's tiles (tree-tiles.ts).
 *
 * Not recovered from segments: retention settings (expiresAt, pruneAfterMs) of a deleted
 * head; set them again with PUT .../retention.
 */

export interface RepairResult {
  /** Whether the head was written (false: it already matched the chain). */
  repaired: boolean;
  /** The head found before, or null when there was none. */
  before: { seq: number; hash: string } | null;
  head: {
    seq: number;
    hash: string;
    stateDigest: string;
    deltas: number;
    stateSeq: number;
  };
  /** The pruning point the repaired chain starts after, when pruned. */
  prunedSeq?: number;
}

export interface HeadRepairOptions {
  records: RecordStore;
  reader: Reader;
  clock: Clock;
}

interface ChainStart {
  point: ChainPoint;
  effect: StateEffect;
  pruned: boolean;
  /** The digest version when no event shows one: a pruning point's base says it. */
  digestVersion: DigestVersion;
}

/** The digest version the first state-setting event of a batch shows, if it shows one. */
const versionShownBy = (
  events: Array<{ type: string; payload: () => unknown }>,
): DigestVersion | undefined => {
  for (const e of events) {
    const payload = e.payload() as { digestVersion?: unknown; baseDigest?: unknown } | null;
    if (e.type === FORK_EVENT) return payload?.digestVersion === 2 ? 2 : 1;
    if (e.type !== DELTA_EVENT) continue;
    if (payload?.baseDigest === EMPTY_STATE_DIGEST_V2) return 2;
    if (payload?.baseDigest === EMPTY_STATE_DIGEST) return 1;
    return undefined;
  }
  return undefined;
};

export class HeadRepair {
  readonly #o: HeadRepairOptions;

  constructor(options: HeadRepairOptions) {
    this.#o = options;
  }

  async repair(tenant: string, stream: string): Promise<RepairResult> {
    const { records, reader, clock } = this.#o;
    const item = await records.get(headKey(tenant, stream));
    const current = item ? toHead(item) : undefined;
    if (current?.status === 'deleting') throw new StreamNotFoundError(stream);
    const start = await this.#start(tenant, stream, current);

    let effect = start.effect;
    let end = start.point;
    let firstTs: number | undefined;
    const empty: TreeState = { treeBase: 0, treeSize: 0, frontier: [] };
    let tree: TreeState | undefined;
    let version: DigestVersion | undefined = current ? digestVersionOf(current) : undefined;
    await reader.retrying(async () => {
      effect = start.effect;
      end = start.point;
      tree = start.pruned ? undefined : empty;
      version = current ? digestVersionOf(current) : undefined;
      await reader.walk(
        tenant,
        stream,
        start.point.seq + 1,
        start.point,
        () => ({}),
        (seg, e) => {
          effect = stateEffect(sealedEffect(seg.events), effect);
          if (tree)
            tree = extendTree(
              tree,
              seg.events.map((ev) => ev.hash),
            );
          version ??= versionShownBy(sealedEffect(seg.events));
          if (seg.events[0]?.seq === 1) firstTs = seg.events[0].ts;
          end = { seq: e.lastSeq, hash: e.lastHash };
          return true;
        },
      );
    });

    // A deleted head's digest version is read off the chain: a fork says it, a first delta
    // starts from the empty state of its version; a chain with neither never hashed a state.
    const digestVersion = version ?? start.digestVersion;
    if (effect.stateSeq === 0) effect = { ...effect, stateDigest: emptyStateDigest(digestVersion) };
    const head = { seq: end.seq, hash: end.hash, ...effect };
    const result = {
      before: current ? { seq: current.seq, hash: current.hash } : null,
      head,
      ...(start.pruned ? { prunedSeq: start.point.seq } : {}),
    };
    // From genesis every field is recomputed exactly; after a pruning point the delta count
    // and state seq come from its base record, so only what the chain proves is compared.
    const compared: Array<keyof typeof head> = start.pruned
      ? ['seq', 'hash', 'stateDigest']
      : ['seq', 'hash', 'stateDigest', 'deltas', 'stateSeq'];
    const matches = current !== undefined && compared.every((k) => current[k] === head[k]);
    if (!matches) {
      const written = digestVersion === 2 ? { ...head, digestVersion } : head;
      await this.#write(tenant, stream, current, written, start, firstTs ?? clock.now(), tree);
    }
    return { repaired: !matches, ...result };
  }

  /** Step 2: where the chain to rebuild from starts, and the state there. */
  async #start(tenant: string, stream: string, current?: HeadRecord): Promise<ChainStart> {
    const genesis: ChainStart = {
      point: { seq: 0, hash: genesisHash(tenant, stream) },
      effect: { stateDigest: EMPTY_STATE_DIGEST, deltas: 0, stateSeq: 0 },
      pruned: false,
      digestVersion: 2,
    };
    let point: ChainPoint;
    if (current) {
      if (current.prunedSeq === undefined || current.prunedHash === undefined) return genesis;
      point = { seq: current.prunedSeq, hash: current.prunedHash };
    } else {
      const first = await firstIndexRecord(this.#o.records, tenant, stream);
      if (!first) throw new StreamNotFoundError(stream);
      if (first.firstSeq === 1) return genesis;
      point = await this.#prunedPoint(tenant, stream, first);
    }
    // Pruning writes a base snapshot at its point first: its record gives the state there.
    const base = await this.#o.records.get(snapshotIndexKey(tenant, stream, point.seq));
    const snapshot = base ? toSnapshotIndex(base) : undefined;
    if (!snapshot || snapshot.hash !== point.hash) {
      throw new TamperedLedgerError(
        point.seq + 1,
        'the chain starts after seq 1 but no base snapshot marks a pruning point there',
      );
    }
    const effect = {
      stateDigest: snapshot.stateDigest,
      deltas: snapshot.deltas ?? 0,
      // The checkpoint the base holds the state of (bases written before name none).
      stateSeq: snapshot.stateSeq ?? point.seq,
    };
    return {
      point,
      effect,
      pruned: true,
      digestVersion: digestVersionOf(base as { digestVersion?: unknown }),
    };
  }

  /**
   * The pruning point of a stream without a head: retention keeps the segments from the one
   * holding its base's checkpoint (state-binding.ts), so the first kept segment may start
   * below it; the point is the lowest base at or after that segment's start that ends a
   * segment (bases below the point were deleted with it).
   */
  async #prunedPoint(
    tenant: string,
    stream: string,
    first: { firstSeq: number; prevHash: string },
  ): Promise<ChainPoint> {
    const bases = [];
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), {
        skPrefix: SNAPSHOT_INDEX_PREFIX,
        after,
      });
      bases.push(...page.items.map(toSnapshotIndex));
      after = page.next;
    } while (after !== undefined);
    for (const base of bases.reverse()) {
      if (base.seq < first.firstSeq - 1) continue;
      if (base.seq === first.firstSeq - 1) break;
      const end = await this.#o.records.get(segmentIndexKey(tenant, stream, base.seq));
      if (end && toSegmentIndex(end).lastHash === base.hash)
        return { seq: base.seq, hash: base.hash };
      break;
    }
    return { seq: first.firstSeq - 1, hash: first.prevHash };
  }

  /** Step 4. */
  async #write(
    tenant: string,
    stream: string,
    current: HeadRecord | undefined,
    head: RepairResult['head'],
    start: ChainStart,
    createdAt: number,
    tree: TreeState | undefined,
  ): Promise<void> {
    const now = this.#o.clock.now();
    const key = headKey(tenant, stream);
    const treeSet = tree ? { ...treeFields(tree), witPending: true } : {};
    const marker: TransactOp = {
      kind: 'put',
      item: { ...witnessKey(tenant, stream), tenant, stream },
    };
    const ops: TransactOp[] = tree ? [marker] : [];
    try {
      if (current) {
        const stale = ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'];
        ops.unshift({
          kind: 'update',
          key,
          update: {
            set: { ...head, updatedAt: now, ...treeSet },
            // A tree signed over the old head no longer fits it (treeHead: a stale receipt).
            remove: tree ? ['treeHead'] : stale,
          },
          conditions: [
            { op: 'eq', attr: 'seq', value: current.seq },
            { op: 'eq', attr: 'hash', value: current.hash },
            { op: 'attrNotExists', attr: 'status' },
          ],
        });
        await this.#o.records.transact(ops);
        return;
      }
      const item: Item = { ...key, ...head, epoch: 0, createdAt, updatedAt: now, pending: 0 };
      Object.assign(item, treeSet);
      if (start.pruned)
        Object.assign(item, { prunedSeq: start.point.seq, prunedHash: start.point.hash });
      ops.unshift({ kind: 'put', item, conditions: [{ op: 'notExists' }] });
      await this.#o.records.transact(ops);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      throw new ConflictError('the head changed while it was repaired: run the repair again');
    }
  }
}
