import { type HeadRecord, toHead } from '../chain/layout.js';
import { dueKey, headKey } from '../chain/storage-keys.js';
import { StreamNotFoundError, UnavailableError } from '../domain/errors.js';
import { optimistic } from '../domain/optimistic.js';
import type { Clock } from '../ports/clock.js';
import type { Condition, JsonValue, RecordStore, TransactOp } from '../ports/record-store.js';

/**
 * Retention settings of a stream, kept on its head:
 * - `expiresAt` (ms): once passed, the compactor deletes the whole stream. Setting a TTL puts
 *   a scheduled visit at that time in the same transaction; the head stays the truth (an
 *   earlier visit left behind by a later change finds nothing due).
 * - `pruneAfterMs`: events older than this are pruned by the compactor (it schedules its own
 *   later visits); setting it schedules a visit now.
 * A stream being deleted answers ErrStreamNotFound.
 */

export interface RetentionOptions {
  records: RecordStore;
  clock: Clock;
  /** Lost races with concurrent changes before ErrUnavailable. Default 8. */
  maxAttempts?: number;
}

export interface RetentionChange {
  /** Time to live from now, ms; null: keep forever. Undefined: unchanged. */
  ttlMs?: number | null;
  /** Prune events older than this, ms; null: never. Undefined: unchanged. */
  pruneAfterMs?: number | null;
}

export interface RetentionView {
  expiresAt?: number;
  pruneAfterMs?: number;
  prunedSeq?: number;
  prunedHash?: string;
}

const viewOf = (head: HeadRecord): RetentionView => {
  const view: RetentionView = {};
  if (head.expiresAt !== undefined) view.expiresAt = head.expiresAt;
  if (head.pruneAfterMs !== undefined) view.pruneAfterMs = head.pruneAfterMs;
  if (head.prunedSeq !== undefined) view.prunedSeq = head.prunedSeq;
  if (head.prunedHash !== undefined) view.prunedHash = head.prunedHash;
  return view;
};

/** `attr` still holds what was read (absent included). */
const unchanged = (attr: string, value: number | undefined): Condition =>
  value === undefined ? { op: 'attrNotExists', attr } : { op: 'eq', attr, value };

export class Retention {
  readonly #o: Required<RetentionOptions>;

  constructor(options: RetentionOptions) {
    this.#o = { ...options, maxAttempts: options.maxAttempts ?? 8 };
  }

  async #head(tenant: string, stream: string): Promise<HeadRecord> {
    const item = await this.#o.records.get(headKey(tenant, stream));
    const head = item && toHead(item);
    if (!head || head.status === 'deleting') throw new StreamNotFoundError(stream);
    return head;
  }

  async get(tenant: string, stream: string): Promise<RetentionView> {
    return viewOf(await this.#head(tenant, stream));
  }

  async set(tenant: string, stream: string, change: RetentionChange): Promise<RetentionView> {
    return optimistic(
      async () => {
        const head = await this.#head(tenant, stream);
        const now = this.#o.clock.now();
        const set: Record<string, JsonValue> = {};
        const remove: string[] = [];
        const visits = new Set<number>();
        const stale = new Set<number>();
        if (change.ttlMs !== undefined) {
          const expiresAt = change.ttlMs === null ? undefined : now + change.ttlMs;
          if (expiresAt === undefined) remove.push('expiresAt');
          else {
            set.expiresAt = expiresAt;
            visits.add(expiresAt);
          }
          if (head.expiresAt !== undefined && head.expiresAt !== expiresAt)
            stale.add(head.expiresAt);
        }
        if (change.pruneAfterMs !== undefined) {
          if (change.pruneAfterMs === null) remove.push('pruneAfterMs');
          else {
            set.pruneAfterMs = change.pruneAfterMs;
            visits.add(now);
          }
        }
        const ops: TransactOp[] = [
          {
            kind: 'update',
            key: headKey(tenant, stream),
            update: { set, remove },
            conditions: [
              { op: 'exists' },
              { op: 'attrNotExists', attr: 'status' },
              unchanged('expiresAt', head.expiresAt),
              unchanged('pruneAfterMs', head.pruneAfterMs),
            ],
          },
          ...[...visits].map(
            (at): TransactOp => ({
              kind: 'put',
              item: { ...dueKey(tenant, stream, at), tenant, stream },
            }),
          ),
          ...[...stale]
            .filter((at) => !visits.has(at))
            .map((at): TransactOp => ({ kind: 'delete', key: dueKey(tenant, stream, at) })),
        ];
        await this.#o.records.transact(ops);
        const after: HeadRecord = { ...head, ...set } as HeadRecord;
        for (const attr of remove) delete (after as unknown as Record<string, unknown>)[attr];
        return viewOf(after);
      },
      {
        attempts: this.#o.maxAttempts,
        exhausted: () => {
          throw new UnavailableError(`retention of stream ${stream} kept changing under us`);
        },
      },
    );
  }
}
