import type { Clock } from '../ports/clock.js';
import type { RecordStore } from '../ports/record-store.js';
import { IO_CONCURRENCY, mapLimit } from './compact-types.js';
import { headKey, streamIndexPk, toHead } from './layout.js';
import type { LeaseService } from './leases.js';

/**
 * A tenant's streams in id order, a page at a time, for `GET /v1/streams` (the console, the
 * LangGraph saver's thread listing). Reads the tenant's stream index (layout.ts), then the
 * head and the lease of each stream on the page: the cost of a page is one query (more only
 * when the store answers short pages) and two gets per stream, whatever the tenant holds.
 */

export interface ListedLease {
  owner: string;
  epoch: number;
  draining: boolean;
  /** ms since the epoch. */
  expiresAt: number;
}

export interface ListedStream {
  streamId: string;
  /** The head seq. */
  seq: number;
  /** When the head last moved (ms). */
  updatedAt: number;
  /** The lease while it is held (active, not expired); null when free. */
  lease: ListedLease | null;
}

export interface StreamListPage {
  streams: ListedStream[];
  /** Pass as `after` to read on; null once the list is exhausted. */
  next: string | null;
}

export interface ListRequest {
  /** Only streams whose id starts with this ('' or absent: all). */
  prefix?: string;
  /** Exclusive cursor: the last stream id of the previous page. */
  after?: string;
  limit: number;
}

export interface StreamListOptions {
  records: RecordStore;
  clock: Clock;
  leases: LeaseService;
}

export class StreamList {
  readonly #o: StreamListOptions;

  constructor(options: StreamListOptions) {
    this.#o = options;
  }

  async list(tenant: string, req: ListRequest): Promise<StreamListPage> {
    const { records } = this.#o;
    const ids: string[] = [];
    let after = req.after;
    let more = true;
    // A store may answer fewer rows than asked (DynamoDB's 1 MB pages): ask again from the
    // last row until the page is full, so `next` is null only at the true end.
    while (more && ids.length < req.limit) {
      const page = await records.query(streamIndexPk(tenant), {
        skPrefix: req.prefix || undefined,
        after,
        limit: req.limit - ids.length,
      });
      ids.push(...page.items.map((item) => item.sk));
      after = page.next;
      more = page.next !== undefined;
    }
    const rows = await mapLimit(ids, IO_CONCURRENCY, (id) => this.#row(tenant, id));
    const streams = rows.filter((row): row is ListedStream => row !== undefined);
    return { streams, next: more ? (ids.at(-1) ?? null) : null };
  }

  /**
   * One stream's row. A stream whose head is gone (deleted between the index read and now,
   * or by tampering: opening it tells ErrTamperedLedger) or being deleted is left out; the
   * cursor still moves past it.
   */
  async #row(tenant: string, streamId: string): Promise<ListedStream | undefined> {
    const [item, lease] = await Promise.all([
      this.#o.records.get(headKey(tenant, streamId)),
      this.#o.leases.get(tenant, streamId),
    ]);
    if (!item) return undefined;
    const head = toHead(item);
    if (head.status === 'deleting') return undefined;
    const held = lease?.active === true && lease.expiresAt > this.#o.clock.now();
    return {
      streamId,
      seq: head.seq,
      updatedAt: head.updatedAt,
      lease:
        held && lease
          ? {
              owner: lease.owner,
              epoch: lease.epoch,
              draining: lease.draining,
              expiresAt: lease.expiresAt,
            }
          : null,
    };
  }
}
