import { toHead } from '../chain/layout.js';
import { headKey, streamIndexPk, writerLeaseKey } from '../chain/storage-keys.js';
import { InvalidInputError } from '../domain/errors.js';
import type { Clock } from '../ports/clock.js';
import type { RecordStore } from '../ports/record-store.js';

/**
 * Listing a tenant's streams: `GET /v1/streams?prefix=&after=&limit=`.
 *
 * Served from the per-tenant stream index (`pk = t#{tenant}#streams`, `sk = {streamId}`), one
 * record per stream, put by the commit transaction that creates the stream (commit-extras.ts)
 * and deleted by the compactor's last step of a stream's deletion (compact-retention.ts). A
 * page is one query of the index plus one get of the head and one of the lease per stream it
 * names: its cost is proportional to the page, never to the tenant. A stream whose head is
 * gone or marked `deleting` is left out (it reads as not found).
 *
 * Streams created before the index existed have no record and are not listed.
 */

export interface ListedLease {
  owner: string;
  epoch: number;
  draining: boolean;
  expiresAt: number;
}

export interface ListedStream {
  streamId: string;
  seq: number;
  /** Milliseconds since the epoch. */
  updatedAt: number;
  /** The writer lease while it is held (active and not expired), else null. */
  lease: ListedLease | null;
}

export interface StreamListPage {
  streams: ListedStream[];
  /** Pass as `after` to read on; null at the end. */
  next: string | null;
}

export interface StreamListOptions {
  prefix?: string;
  /** Exclusive: streams after this id. */
  after?: string;
  /** 1..1000, default 100. */
  limit?: number;
}

export const STREAM_LIST_LIMIT = { default: 100, max: 1000 } as const;

export class StreamList {
  constructor(readonly deps: { records: RecordStore; clock: Clock }) {}

  async list(tenant: string, o: StreamListOptions = {}): Promise<StreamListPage> {
    const limit = o.limit ?? STREAM_LIST_LIMIT.default;
    if (!Number.isInteger(limit) || limit < 1 || limit > STREAM_LIST_LIMIT.max) {
      throw new InvalidInputError(`limit must be 1..${STREAM_LIST_LIMIT.max}`);
    }
    const { records, clock } = this.deps;
    const page = await records.query(streamIndexPk(tenant), {
      skPrefix: o.prefix ?? '',
      after: o.after,
      limit,
    });
    const now = clock.now();
    const listed = await Promise.all(
      page.items.map(async ({ sk }): Promise<ListedStream | undefined> => {
        const [headItem, leaseItem] = await Promise.all([
          records.get(headKey(tenant, sk)),
          records.get(writerLeaseKey(tenant, sk)),
        ]);
        if (!headItem) return undefined;
        const head = toHead(headItem);
        if (head.status !== undefined) return undefined;
        const held =
          leaseItem?.active === true && typeof leaseItem.expiresAt === 'number'
            ? leaseItem.expiresAt > now
            : false;
        return {
          streamId: sk,
          seq: head.seq,
          updatedAt: head.updatedAt,
          lease:
            held && leaseItem
              ? {
                  owner: String(leaseItem.owner),
                  epoch: Number(leaseItem.epoch),
                  draining: leaseItem.draining === true,
                  expiresAt: Number(leaseItem.expiresAt),
                }
              : null,
        };
      }),
    );
    return {
      streams: listed.filter((s): s is ListedStream => s !== undefined),
      next: page.next ?? null,
    };
  }
}
