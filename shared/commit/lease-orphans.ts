import { headKey, refusedKey } from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import { genesisHash } from '../domain/event.js';
import { emptyStateDigest, NEW_STREAM_DIGEST_VERSION } from '../domain/state-digest.js';
import type { RecordStore, TransactOp } from '../ports/record-store.js';
import type { ChainHead } from './append-model.js';
import { type CommitExtrasOptions, commitExtras } from './commit-extras.js';

/**
 * Orphan segments of writers without a fencing token, while an exclusive lease refuses them.
 *
 * Such a writer's segment at head+1 must never land: neither by its own late commit nor by
 * another writer rolling it forward. Two records make sure of it:
 *
 * - a writer whose commit the lease refused marks its segment refused (`refused#{firstSeq}`,
 *   with the segment's last hash) before it answers ErrFenced, then checks whether someone
 *   adopted it before the mark (then it answers 201, which is the truth). A writer rolling an
 *   unfenced segment forward checks the mark in its commit transaction, and replaces a
 *   refused segment instead;
 * - a writer that finds such a segment while the exclusive lease is held replaces it, after
 *   barring its writer (below), whose commit may still be on its way.
 *
 * A writer that dies before its commit was refused never answered: its segment may land.
 */

type Refusable = { firstSeq: number; lastHash: string };

/** Marks the segment refused (its writer will answer ErrFenced). */
export const markRefused = (
  records: RecordStore,
  tenant: string,
  stream: string,
  segment: Refusable,
): Promise<void> =>
  records.put({ ...refusedKey(tenant, stream, segment.firstSeq), hash: segment.lastHash });

export const isRefused = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  segment: Refusable,
): Promise<boolean> =>
  (await records.get(refusedKey(tenant, stream, segment.firstSeq)))?.hash === segment.lastHash;

/** The condition, in an adopting commit, that the segment was not refused. */
export const notRefusedCheck = (
  tenant: string,
  stream: string,
  segment: Refusable,
): TransactOp => ({
  kind: 'check',
  key: refusedKey(tenant, stream, segment.firstSeq),
  conditions: [
    {
      op: 'any',
      conditions: [{ op: 'notExists' }, { op: 'ne', attr: 'hash', value: segment.lastHash }],
    },
  ],
});

/**
 * Bars the writer of an orphan segment that carries no fencing token from ever committing it,
 * so that the segment can be replaced while an exclusive lease refuses it.
 *
 * A fenced writer's orphan may simply be replaced: its epoch stays fenced forever. An unfenced
 * writer is refused only while the exclusive lease is held; once the lease ends its commit
 * could pass again, and if its segment had been replaced in between, the head would move over
 * bytes that are not the ones it hashed. Its commit is conditional on the head it read (seq
 * and epoch): moving the head's epoch on makes that condition fail forever. A stream without a
 * head yet gets one at seq 0 (stamped as a creating commit would: expiry, due visit), which is
 * what a create-only commit of the orphan's writer then fails on.
 *
 * Returns the head to commit against, or undefined when the head moved meanwhile (start again).
 */
export const barOrphanWriter = async (
  records: RecordStore,
  options: CommitExtrasOptions,
  at: { tenant: string; stream: string; head: ChainHead; now: number; ttlMs?: number },
): Promise<ChainHead | undefined> => {
  const { tenant, stream, head, now } = at;
  const key = headKey(tenant, stream);
  try {
    if (head.exists) {
      const epoch = head.epoch + 1;
      await records.update(
        key,
        { set: { epoch } },
        {
          conditions: [
            { op: 'eq', attr: 'seq', value: head.seq },
            { op: 'eq', attr: 'epoch', value: head.epoch },
            { op: 'attrNotExists', attr: 'status' },
          ],
        },
      );
      return { ...head, epoch };
    }
    const extras = commitExtras(options, {
      tenant,
      stream,
      now,
      head: { exists: false, deltas: 0 },
      lastSeq: 0,
      deltaSeqs: [],
      ttlMs: at.ttlMs,
    });
    const created = {
      seq: 0,
      hash: genesisHash(tenant, stream),
      epoch: 1,
      digestVersion: NEW_STREAM_DIGEST_VERSION,
      stateDigest: emptyStateDigest(NEW_STREAM_DIGEST_VERSION),
      deltas: 0,
      stateSeq: 0,
      createdAt: now,
      updatedAt: now,
      ...extras.head,
    };
    await records.transact([
      { kind: 'put', item: { ...key, ...created }, conditions: [{ op: 'notExists' }] },
      ...extras.ops,
    ]);
    return { ...head, ...created, exists: true } as ChainHead;
  } catch (err) {
    if (err instanceof ConflictError) return undefined;
    throw err;
  }
};
