import { compactorLeaseKey } from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { RecordStore, TransactOp } from '../ports/record-store.js';

/**
 * The compactor's lease on one stream: a record `{owner, until}` in the stream's partition,
 * taken by a conditional put (absent, or expired and unchanged since read). Only one compactor
 * works on a stream at a time; two compactors running at once split the streams between them.
 *
 * The lease is a fence, not only a lock: every record write of a visit carries a check that
 * the lease still names its owner, so a compactor that paused past its lease (and lost it to
 * another) can write nothing. Leases are shorter than the garbage grace period, which is what
 * makes deleting objects (not fenceable) safe: see compact-gc.ts. A visit may last the whole
 * run: it renews its lease before each merge round (`renewLease`), so no round starts on a
 * lease older than `leaseMs`, and one that was lost ends the visit.
 */

export interface Lease {
  owner: string;
  /** The check op to put in every transaction of the visit. */
  fence: TransactOp;
}

export const acquireLease = async (
  records: RecordStore,
  clock: Clock,
  at: { tenant: string; stream: string; owner: string; leaseMs: number },
): Promise<Lease | undefined> => {
  const key = compactorLeaseKey(at.tenant, at.stream);
  const current = await records.get(key);
  const now = clock.now();
  if (current && typeof current.until === 'number' && current.until > now) return undefined;
  try {
    await records.put(
      { ...key, owner: at.owner, until: now + at.leaseMs },
      {
        conditions: current
          ? [
              { op: 'eq', attr: 'owner', value: String(current.owner) },
              { op: 'eq', attr: 'until', value: Number(current.until) },
            ]
          : [{ op: 'notExists' }],
      },
    );
  } catch (err) {
    if (err instanceof ConflictError) return undefined;
    throw err;
  }
  return {
    owner: at.owner,
    fence: { kind: 'check', key, conditions: [{ op: 'eq', attr: 'owner', value: at.owner }] },
  };
};

/** Moves the lease's expiry to now + leaseMs; false when it no longer names `owner`. */
export const renewLease = async (
  records: RecordStore,
  clock: Clock,
  at: { tenant: string; stream: string; owner: string; leaseMs: number },
): Promise<boolean> => {
  try {
    await records.update(
      compactorLeaseKey(at.tenant, at.stream),
      { set: { until: clock.now() + at.leaseMs } },
      { conditions: [{ op: 'eq', attr: 'owner', value: at.owner }] },
    );
    return true;
  } catch (err) {
    if (err instanceof ConflictError) return false;
    throw err;
  }
};

export const releaseLease = async (
  records: RecordStore,
  at: { tenant: string; stream: string; owner: string },
): Promise<void> => {
  try {
    await records.delete(compactorLeaseKey(at.tenant, at.stream), {
      conditions: [{ op: 'eq', attr: 'owner', value: at.owner }],
    });
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
  }
};
