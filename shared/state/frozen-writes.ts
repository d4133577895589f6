import type { HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { labelKey } from '../chain/storage-keys.js';
import { checkWrites, tipOf } from '../chain/writes-binding.js';
import type { AppendOutcome, AppendRequest, ChainHead } from '../commit/append-model.js';
import { canonicalJson } from '../domain/canonical.js';
import { SeqConflictError, UnavailableError } from '../domain/errors.js';
import { optimistic } from '../domain/optimistic.js';
import {
  pendingWritesDigest,
  WRITES_EVENT,
  type WritesBinding,
  type WritesPayload,
} from '../domain/pending-writes.js';
import type { RecordStore } from '../ports/record-store.js';
import {
  type LateWrites,
  type PendingWrite,
  type PendingWriteInput,
  readWrites,
} from './pending-writes.js';

/**
 * Binding a checkpoint's pending writes to the chain (writes-binding.ts, docs/ledger-format.md
 * "Pending writes"), with no write of its own. A checkpoint T takes writes directly while it is
 * the tip (the checkpoint the head's state is); the commit that moves the head's state off it
 * freezes it, and the next commit binds it:
 *
 *   1. A checkpoint C committed while T is the tip carries `leaves: T`; its commit sets T's
 *      label record `writesFrozen` (commit-extras.ts, from the payload). A direct write's
 *      transaction requires that attribute absent, so from that commit on none can land on T:
 *      T's set changes only through 3.
 *   2. The next checkpoint C2 (C is its tip, `leaves` of C names T) reads T's writes (checked
 *      against their binding if a `hefesto.writes` event bound them since, so tampering is
 *      never bound in), digests them and carries `pendingWrites: {label: T, digest}`,
 *      committed exactly at head + 1 (else digested again on the head as it is then: a
 *      `hefesto.writes` event to T may have landed). Its commit sets T's `writesSeq`.
 *      Dies anywhere: nothing is written but the append's own commit.
 *   3. `append`: a write to a frozen checkpoint (LangGraph writing RESUME to an old checkpoint
 *      it resumes; a write that arrived after the next put) is a `hefesto.writes` event
 *      holding the writes that change the set and the digest of the whole set with them,
 *      committed exactly at head + 1; its commit writes their records and `writesSeq` (one
 *      commit: a writer rolling the segment forward writes the same). Retried, it finds
 *      nothing to change and appends nothing.
 * So the writes of every checkpoint but the tip and the one it left are bound. Freezing and
 * binding in one commit would need the freeze written before the read (one more durable write
 * per checkpoint: LangGraph does not order a superstep's writes before the next put).
 */

/** The appends the late path makes (append.ts's Appender). */
export interface WritesAppender {
  readHead(tenant: string, stream: string): Promise<ChainHead>;
  append(req: AppendRequest): Promise<AppendOutcome>;
}

/** Writes per `hefesto.writes` event: its commit transaction stays below 100 items. */
export const WRITES_PER_EVENT = 64;
const MAX_ATTEMPTS = 16;

const keyOf = (w: { taskPath: string; taskId: string; idx: number }) =>
  `${w.taskPath}\u0000${w.taskId}\u0000${w.idx}`;

const sameWrite = (a: PendingWriteInput, b: PendingWriteInput) =>
  a.channel === b.channel &&
  canonicalJson(a.ref ? { ref: a.ref } : { value: a.value ?? null }) ===
    canonicalJson(b.ref ? { ref: b.ref } : { value: b.value ?? null });

export class FrozenWrites implements LateWrites {
  constructor(readonly deps: { records: RecordStore; reader: Reader; appender: WritesAppender }) {}

  /**
   * Steps 1 and 2 for a checkpoint about to be committed on `head`: the tip it leaves (to
   * freeze) and the binding of the checkpoint frozen before (the tip's own `leaves`).
   */
  async prepare(
    tenant: string,
    stream: string,
    head: HeadRecord,
  ): Promise<{ leaves?: string; binding?: WritesBinding }> {
    const { records, reader } = this.deps;
    const tip = await tipOf(records, reader, tenant, stream, head);
    const leaves = tip.label === undefined ? {} : { leaves: tip.label };
    if (tip.leaves === undefined) return leaves;
    const label = tip.leaves;
    const [record, writes] = await Promise.all([
      records.get(labelKey(tenant, stream, label)),
      reader.sealedKeys(tenant, stream, head).then((keys) =>
        readWrites(records, tenant, stream, label, {
          seq: head.seq,
          contentKey: keys?.keys.content,
        }),
      ),
    ]);
    // Frozen by the tip's commit, else writes may still land: left unbound (reads then fail
    // closed once it is neither the tip nor the one the tip left).
    if (record?.writesFrozen !== head.stateSeq) return leaves;
    if (record.writesSeq !== undefined) {
      await checkWrites(reader, tenant, stream, { label, record, head, writes });
    }
    return { ...leaves, binding: { label, digest: pendingWritesDigest(writes) } };
  }

  /** Step 3. */
  async append(
    tenant: string,
    stream: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: PendingWriteInput[] },
    fence?: number,
  ): Promise<number> {
    let written = 0;
    for (let i = 0; i < task.writes.length; i += WRITES_PER_EVENT) {
      const writes = task.writes.slice(i, i + WRITES_PER_EVENT);
      written += await this.#appendPart(tenant, stream, label, { ...task, writes }, fence);
    }
    return written;
  }

  async #appendPart(
    tenant: string,
    stream: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: PendingWriteInput[] },
    fence?: number,
  ): Promise<number> {
    const { records, reader, appender } = this.deps;
    return optimistic(
      async () => {
        const head = await appender.readHead(tenant, stream);
        const record = await records.get(labelKey(tenant, stream, label));
        if (!record) return 0; // deleted with its stream meanwhile: the append would 404 too
        // The set as it is bound now (tampering fails here, never to be bound by this event).
        const keys = await reader.sealedKeys(tenant, stream, head);
        const current = await readWrites(records, tenant, stream, label, {
          seq: head.seq,
          contentKey: keys?.keys.content,
        });
        await checkWrites(reader, tenant, stream, { label, record, head, writes: current });
        const byKey = new Map(current.map((w) => [keyOf(w), w]));
        const changes = task.writes.filter((w) => {
          const had = byKey.get(keyOf({ ...task, idx: w.idx }));
          return had === undefined || (w.idx < 0 && !sameWrite(had, w));
        });
        if (changes.length === 0) return 0;
        for (const w of changes) byKey.set(keyOf({ ...task, idx: w.idx }), { ...task, ...w });
        const payload: WritesPayload = {
          label,
          taskId: task.taskId,
          taskPath: task.taskPath,
          writes: changes.map((w) => ({
            idx: w.idx,
            channel: w.channel,
            ...(w.ref ? { ref: w.ref } : { value: w.value ?? null }),
          })),
          digest: pendingWritesDigest([...byKey.values()] as PendingWrite[]),
        };
        await appender.append({
          tenant,
          stream,
          events: [{ type: WRITES_EVENT, payload: payload as never }],
          expectedSeq: head.seq,
          knownHead: head,
          fence: fence === undefined ? undefined : { epoch: fence, checkpoint: false },
        });
        return changes.length;
      },
      {
        attempts: MAX_ATTEMPTS,
        // The head moved since it was read: read the writes and the head again.
        retryOn: (err) => err instanceof SeqConflictError,
        exhausted: () => {
          throw new UnavailableError(`stream ${stream} is too contended to add writes to ${label}`);
        },
      },
    );
  }
}
