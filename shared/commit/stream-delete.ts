import { toHead } from '../chain/layout.js';
import { dueKey, headKey, writerLeaseKey } from '../chain/storage-keys.js';
import { StreamNotFoundError, UnavailableError } from '../domain/errors.js';
import { optimistic } from '../domain/optimistic.js';
import type { Clock } from '../ports/clock.js';
import type { RecordStore } from '../ports/record-store.js';

/**
 * `DELETE /v1/streams/{id}`: the stream reads as gone at once, the compactor reclaims it.
 *
 *   1. One transaction marks the head `deleting` (condition: still unmarked and the same
 *      stream, by its createdAt), deletes the writer lease (a worker holding it is fenced from
 *      here on) and schedules a compactor visit now. From here reads answer ErrStreamNotFound
 *      and appends are refused (their commit requires no status), exactly as for an expired
 *      stream; so are lease acquisitions and effect begins, completes and fails (their
 *      transactions check the head: chain-head.ts liveHeadCheck), and the stream's effects are
 *      no longer listed. Dies before 1: nothing changed; the caller retries.
 *   2. The compactor's retention step (compact-retention.ts, expiry) waits its grace period,
 *      deletes every object and record of the stream, its entry in the tenant's stream index,
 *      and the head (the tombstone) last: its effect and idempotency records go with its
 *      partition. Once the head is gone the id is free: the next append creates a new
 *      incarnation, whose Idempotency-Keys are its own (a key of the past life is a new
 *      request, and a request naming the past life's incarnation is ErrStreamRecreated).
 * A second DELETE of a stream being deleted answers ErrStreamNotFound.
 */
export class StreamDeleter {
  constructor(readonly deps: { records: RecordStore; clock: Clock }) {}

  async delete(tenant: string, stream: string): Promise<{ deletingAt: number }> {
    const { records, clock } = this.deps;
    return optimistic(
      async () => {
        const item = await records.get(headKey(tenant, stream));
        const head = item && toHead(item);
        if (!head || head.status !== undefined) throw new StreamNotFoundError(stream);
        const now = clock.now();
        await records.transact([
          {
            kind: 'update',
            key: headKey(tenant, stream),
            update: { set: { status: 'deleting', deletingAt: now } },
            conditions: [
              { op: 'attrNotExists', attr: 'status' },
              { op: 'eq', attr: 'createdAt', value: head.createdAt },
            ],
          },
          { kind: 'put', item: { ...dueKey(tenant, stream, now), tenant, stream } },
          { kind: 'delete', key: writerLeaseKey(tenant, stream) },
        ]);
        return { deletingAt: now };
      },
      {
        attempts: 8,
        exhausted: () => {
          throw new UnavailableError(`stream ${stream} kept changing while being deleted`);
        },
      },
    );
  }
}
