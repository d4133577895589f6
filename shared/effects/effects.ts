import { liveHeadCheck } from '../chain/chain-head.js';
import type { Reader } from '../chain/reader.js';
import {
  EFFECT_PREFIX,
  effectEventIdempotencyKey,
  effectRecordKey as effectKeyOf,
  headKey,
  idempotencyRecordKey,
  streamPk,
} from '../chain/storage-keys.js';
import type { Appender } from '../commit/append.js';
import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import {
  ConflictError,
  EffectMismatchError,
  EffectNotHeldError,
  StreamNotFoundError,
} from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import { optimistic } from '../domain/optimistic.js';
import { fenceError, leaseGuard } from '../leases/leases.js';
import type { Clock, IdSource } from '../ports/clock.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';
import { badEffect, checkEffect, floorOf } from './effect-binding.js';
import { EffectEvents } from './effect-events.js';
import { type EffectRecord, type EffectStatus, toEffect } from './effect-model.js';

export {
  EFFECT_COMPLETED,
  EFFECT_FAILED,
  type EffectRecord,
  type EffectStatus,
} from './effect-model.js';

/**
 * Exactly-once side effects (a payment, a push, an email) and sagas.
 *
 * One record per effect (pk the stream, sk `effect#{effectKey}`), moved only by conditional
 * writes: begin reserves it for a holder with a lease; complete / fail finish it, only by
 * that holder, once. The effectKey is also the idempotency key the caller passes to the
 * external system, which is what lets a later caller reconcile an unknown outcome.
 *
 *   begin: absent            -> acquired (holder token, lease)
 *          pending, leased   -> in_progress (retry after the lease)
 *          pending, expired  -> unknown_outcome (holder handed to this caller, who must ask
 *                               the external system whether it happened before finishing)
 *          completed / failed -> the stored result / error: do not run it again
 *   complete/fail: 1. conditional update (holder and pending) -> completed/failed;
 *                  2. the ledger event hefesto.effect.completed/failed, written once and its
 *                     seq kept on the record (effect-events.ts).
 *   Dies between 1 and 2: the effect is finished (exactly once) but its ledger event is
 *   missing until the next begin/complete/fail of that effect, which appends it (under a key
 *   the service derives per stream and never lets expire, so never twice).
 *
 * A begin with the key of an effect begun as another one (another kind, or another intent by
 * canonical JSON) is ErrEffectMismatch: the key names one effect. Every write of the record
 * checks the head in its transaction (liveHeadCheck): a stream being deleted refuses begin,
 * complete and fail (ErrStreamNotFound), so no side effect is started for a stream that is
 * gone. The record keeps the incarnation of the stream it was begun in; the deletion of the
 * stream deletes the records with its partition (compact-retention.ts).
 */

export type BeginOutcome =
  | {
      status: 'acquired';
      effectKey: string;
      holder: string;
      leaseExpiresAt: number;
      attempt: number;
    }
  | {
      status: 'unknown_outcome';
      effectKey: string;
      holder: string;
      leaseExpiresAt: number;
      attempt: number;
    }
  | { status: 'in_progress'; effectKey: string; retryAfterMs: number }
  | { status: 'completed'; effectKey: string; result: JsonValue }
  | { status: 'failed'; effectKey: string; error: JsonValue };

export interface BeginRequest {
  tenant: string;
  stream: string;
  effectKey: string;
  kind: string;
  intent: JsonValue;
  compensation?: JsonValue;
  sagaId?: string;
  leaseMs?: number;
  fence?: number;
}

export interface FinishRequest {
  tenant: string;
  stream: string;
  effectKey: string;
  holder: string;
  outcome: { result: JsonValue } | { error: JsonValue };
  fence?: number;
}

export interface EffectServiceOptions {
  records: RecordStore;
  appender: Appender;
  /** Finds the events of effects finished before their seq was kept. */
  reader: Reader;
  clock: Clock;
  ids: IdSource;
  /** Default holder lease. Default 30 s. */
  leaseMs?: number;
}

/** Whether a begin names the effect the record was begun as: same kind, same intent. */
const sameEffect = (record: EffectRecord, req: BeginRequest): boolean =>
  record.kind === req.kind &&
  canonicalJson(record.intent ?? null) === canonicalJson(req.intent ?? null);

export class EffectService {
  readonly #o: EffectServiceOptions & { leaseMs: number };
  readonly #events: EffectEvents;

  constructor(options: EffectServiceOptions) {
    this.#o = { ...options, leaseMs: options.leaseMs ?? 30_000 };
    this.#events = new EffectEvents(options);
  }

  async get(tenant: string, stream: string, effectKey: string): Promise<EffectRecord | undefined> {
    const item = await this.#o.records.get(effectKeyOf(tenant, stream, effectKey));
    return item ? toEffect(item) : undefined;
  }

  async begin(req: BeginRequest): Promise<BeginOutcome> {
    const { clock, ids } = this.#o;
    const key = effectKeyOf(req.tenant, req.stream, req.effectKey);
    const leaseMs = req.leaseMs ?? this.#o.leaseMs;
    return optimistic<BeginOutcome>(
      async () => {
        const now = clock.now();
        // Read together: the head's incarnation goes on the record and into the write's check;
        // the keys of the effect's ledger events say whether it was finished (effect-binding.ts).
        const [current, head, ...events] = await Promise.all([
          this.get(req.tenant, req.stream, req.effectKey),
          this.#o.records.get(headKey(req.tenant, req.stream)),
          ...(['completed', 'failed'] as const).map((status) =>
            this.#o.records.get(
              idempotencyRecordKey(
                req.tenant,
                req.stream,
                '',
                effectEventIdempotencyKey(status, req.effectKey),
              ),
            ),
          ),
        ]);
        if (head?.status !== undefined) throw new StreamNotFoundError(req.stream);
        const ended = events.find((e) => e !== undefined);
        if (!current && ended) {
          // Its event was written, its record is gone: never run it again.
          const seq = Number((ended.body as { firstSeq?: unknown } | undefined)?.firstSeq ?? 0);
          throw badEffect(seq, req.effectKey, 'it was finished but its record is gone');
        }
        if (current && current.effectKey !== req.effectKey) {
          // Another effect's record under this key: nothing of it is served (effect-binding.ts).
          throw badEffect(
            current.eventSeq ?? 0,
            req.effectKey,
            `its record is ${current.effectKey}'s`,
          );
        }
        if (current && !sameEffect(current, req)) throw new EffectMismatchError(req.effectKey);
        const incarnation = typeof head?.incarnation === 'string' ? head.incarnation : undefined;
        if (current?.status === 'completed' || current?.status === 'failed') {
          const finished = await this.#events.ensure(req.tenant, req.stream, current, req.fence);
          // The stored outcome is served only as its event committed it (effect-binding.ts).
          await checkEffect(
            this.#o.reader,
            req.tenant,
            req.stream,
            finished,
            floorOf(head),
            req.effectKey,
          );
          return current.status === 'completed'
            ? { status: 'completed', effectKey: req.effectKey, result: current.result ?? null }
            : { status: 'failed', effectKey: req.effectKey, error: current.error ?? null };
        }
        if (current && current.leaseExpiresAt > now) {
          return {
            status: 'in_progress',
            effectKey: req.effectKey,
            retryAfterMs: current.leaseExpiresAt - now,
          };
        }
        const holder = ids.newId();
        const next: EffectRecord = current
          ? { ...current, holder, leaseExpiresAt: now + leaseMs, attempts: current.attempts + 1 }
          : {
              effectKey: req.effectKey,
              ...(incarnation && { incarnation }),
              kind: req.kind,
              intent: req.intent,
              compensation: req.compensation ?? null,
              sagaId: req.sagaId ?? null,
              status: 'pending',
              holder,
              leaseExpiresAt: now + leaseMs,
              attempts: 1,
              result: null,
              error: null,
              createdAt: now,
              finishedAt: null,
            };
        await this.#write(
          {
            kind: 'put',
            item: { ...key, ...(next as unknown as Record<string, JsonValue>) },
            conditions: current
              ? [
                  { op: 'eq', attr: 'holder', value: current.holder },
                  { op: 'eq', attr: 'status', value: 'pending' },
                ]
              : [{ op: 'notExists' }],
          },
          req,
          incarnation,
        ); // lost to someone who moved it: optimistic() looks again
        const granted = {
          effectKey: req.effectKey,
          holder,
          leaseExpiresAt: next.leaseExpiresAt,
          attempt: next.attempts,
        };
        return current
          ? { status: 'unknown_outcome', ...granted }
          : { status: 'acquired', ...granted };
      },
      {
        attempts: 5,
        exhausted: async () => {
          const now = await this.get(req.tenant, req.stream, req.effectKey);
          return {
            status: 'in_progress',
            effectKey: req.effectKey,
            retryAfterMs: Math.max(1, (now?.leaseExpiresAt ?? 0) - clock.now()),
          };
        },
      },
    );
  }

  /** Completes or fails an effect held by `holder`; a repeat of the same call is a no-op. */
  async finish(req: FinishRequest): Promise<EffectRecord> {
    const { records, clock } = this.#o;
    const status: EffectStatus = 'result' in req.outcome ? 'completed' : 'failed';
    const value = 'result' in req.outcome ? req.outcome.result : req.outcome.error;
    const key = effectKeyOf(req.tenant, req.stream, req.effectKey);
    let record: EffectRecord;
    try {
      const finishedAt = clock.now();
      const outcome = { [status === 'completed' ? 'result' : 'error']: value };
      const set = { status, ...outcome, finishedAt, eventSeq: 0 };
      await this.#write(
        {
          kind: 'update',
          key,
          update: { set },
          conditions: [
            { op: 'eq', attr: 'holder', value: req.holder },
            { op: 'eq', attr: 'status', value: 'pending' },
          ],
        },
        req,
      );
      const item = await records.get(key);
      if (!item) throw new EffectNotHeldError(req.effectKey);
      record = toEffect(item);
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      const current = err.current ? toEffect(err.current as Item) : undefined;
      const same = current?.holder === req.holder && current.status === status;
      if (!current || !same) throw new EffectNotHeldError(req.effectKey);
      record = current; // this very call, repeated: answer it again
    }
    return this.#events.ensure(req.tenant, req.stream, record, req.fence);
  }

  /**
   * One conditional write of the effect record, in one transaction with the lease guard: a
   * fenced worker can neither take nor finish an effect, nor can a worker without a token
   * while another holds the stream's lease exclusively.
   */
  async #write(
    op: TransactOp,
    req: { tenant: string; stream: string; fence?: number },
    incarnation?: string,
  ): Promise<void> {
    const now = this.#o.clock.now();
    const fence = req.fence === undefined ? undefined : { epoch: req.fence, checkpoint: false };
    try {
      await this.#o.records.transact([
        op,
        leaseGuard(req.tenant, req.stream, fence, now),
        liveHeadCheck(req.tenant, req.stream, incarnation),
      ]);
    } catch (err) {
      if (err instanceof ConflictError && err.index === 1) {
        throw fenceError(err.current as Item | undefined, { epoch: req.fence }, now);
      }
      if (err instanceof ConflictError && err.index === 2) {
        throw new StreamNotFoundError(req.stream);
      }
      throw err;
    }
  }

  /** Completed effects of a saga that registered a compensation, latest first. */
  async compensable(tenant: string, stream: string, sagaId: string): Promise<EffectRecord[]> {
    const out: EffectRecord[] = [];
    const keys = new Map<EffectRecord, string>();
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), {
        skPrefix: EFFECT_PREFIX,
        after,
        limit: 100,
      });
      for (const item of page.items) {
        const e = toEffect(item);
        if (
          e.sagaId === sagaId &&
          e.status === 'completed' &&
          e.compensation !== null &&
          !e.effectKey.startsWith('compensate:')
        ) {
          out.push(e);
          keys.set(e, item.sk.slice(EFFECT_PREFIX.length));
        }
      }
      after = page.next;
    } while (after !== undefined);
    const head = await this.#o.records.get(headKey(tenant, stream));
    await mapLimit(out, 8, (e) =>
      checkEffect(this.#o.reader, tenant, stream, e, floorOf(head), keys.get(e)),
    );
    return out.sort(
      (a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0) || (a.effectKey < b.effectKey ? 1 : -1),
    );
  }
}
