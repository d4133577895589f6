import type { Reader } from '../chain/reader.js';
import { EFFECT_PREFIX, headKey, streamPk } from '../chain/storage-keys.js';
import type { JsonValue } from '../domain/canonical.js';
import { StreamNotFoundError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import type { Clock } from '../ports/clock.js';
import type { RecordStore } from '../ports/record-store.js';
import { checkEffect, floorOf } from './effect-binding.js';
import { toEffect } from './effect-model.js';

/**
 * A stream's effects in effect-key order, a page at a time (`GET /v1/streams/{id}/effects`,
 * for the console). One query over the stream's partition per page. The holder token is
 * never shown: it is what lets a caller complete or fail the effect.
 */

/** What a reader may do about an effect, as `begin` would answer it now. */
export type ListedEffectStatus = 'acquired' | 'unknown_outcome' | 'completed' | 'failed';

export interface ListedEffect {
  effectKey: string;
  kind: string;
  status: ListedEffectStatus;
  sagaId: string | null;
  attempts: number;
  intent: JsonValue;
  compensation: JsonValue | null;
  result: JsonValue | null;
  error: JsonValue | null;
  createdAt: number;
  finishedAt: number | null;
  /** Until when the holder's reservation stands (pending effects). */
  leaseExpiresAt: number;
  /** Seq of its ledger event once written. */
  eventSeq: number | null;
}

export interface EffectListPage {
  effects: ListedEffect[];
  next: string | null;
}

export class EffectList {
  readonly #records: RecordStore;
  readonly #clock: Clock;
  readonly #reader: Reader | undefined;

  /**
   * `reader`: every finished effect listed is checked against its ledger event first
   * (effect-binding.ts); without one (tests of the records alone), served as stored.
   */
  constructor(options: { records: RecordStore; clock: Clock; reader?: Reader }) {
    this.#records = options.records;
    this.#clock = options.clock;
    this.#reader = options.reader;
  }

  async list(
    tenant: string,
    stream: string,
    req: { after?: string; limit: number },
  ): Promise<EffectListPage> {
    // A stream being deleted lists nothing: its effects end with it (effects.ts).
    const head = await this.#records.get(headKey(tenant, stream));
    if (!head || head.status !== undefined) throw new StreamNotFoundError(stream);
    const page = await this.#records.query(streamPk(tenant, stream), {
      skPrefix: EFFECT_PREFIX,
      after: req.after === undefined ? undefined : `${EFFECT_PREFIX}${req.after}`,
      limit: req.limit,
    });
    const reader = this.#reader;
    if (reader) {
      const floor = floorOf(head);
      await mapLimit(page.items, 8, (item) =>
        checkEffect(
          reader,
          tenant,
          stream,
          toEffect(item),
          floor,
          item.sk.slice(EFFECT_PREFIX.length),
        ),
      );
    }
    const now = this.#clock.now();
    const effects = page.items.map((item): ListedEffect => {
      const e = toEffect(item);
      const status: ListedEffectStatus =
        e.status !== 'pending' ? e.status : e.leaseExpiresAt > now ? 'acquired' : 'unknown_outcome';
      return {
        effectKey: e.effectKey,
        kind: e.kind,
        status,
        sagaId: e.sagaId ?? null,
        attempts: e.attempts,
        intent: e.intent,
        compensation: e.compensation ?? null,
        result: e.result ?? null,
        error: e.error ?? null,
        createdAt: e.createdAt,
        finishedAt: e.finishedAt ?? null,
        leaseExpiresAt: e.leaseExpiresAt,
        eventSeq: e.eventSeq ? e.eventSeq : null,
      };
    });
    const last = effects.at(-1);
    return { effects, next: page.next !== undefined && last ? last.effectKey : null };
  }
}
