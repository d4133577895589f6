import { toIdempotency } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import {
  effectEventIdempotencyKey,
  effectRecordKey,
  legacyIdempotencyKey,
} from '../chain/storage-keys.js';
import type { Appender } from '../commit/append.js';
import { canonicalJson } from '../domain/canonical.js';
import { ConflictError, StreamNotFoundError } from '../domain/errors.js';
import { sha256Hex } from '../domain/hashing.js';
import type { RecordStore } from '../ports/record-store.js';
import { effectEventPayload } from './effect-binding.js';
import { EFFECT_COMPLETED, EFFECT_FAILED, type EffectRecord } from './effect-model.js';

/**
 * The ledger event of a finished effect (hefesto.effect.completed / failed), written once.
 *
 *   1. (effects.ts) the effect record moves to completed/failed with `eventSeq: 0`;
 *   2. the event is appended under a key the service derives from (stream, status, effect
 *      key), in the service's own namespace (storage-keys.ts): no client key can collide with it,
 *      the same effect key on another stream is another key, and its record never expires;
 *   3. the event's seq is kept on the effect record: later calls write nothing at all.
 *   Dies after 1: the next call on the effect appends the event. After 2: the next call's
 *   append finds the idempotency record (however late it comes) and keeps the seq.
 *
 * Records finished by an earlier version have no `eventSeq`, and their event sits under a
 * tenant-wide key `effect:{key}:{status}` that expires in 24 h: the first later call looks
 * it up there, or else scans the stream for the event, and keeps what it finds.
 */

export interface EffectEventsOptions {
  records: RecordStore;
  appender: Appender;
  reader: Reader;
}

const typeOf = (effect: EffectRecord) =>
  effect.status === 'completed' ? EFFECT_COMPLETED : EFFECT_FAILED;

const digestOf = (effect: EffectRecord) =>
  sha256Hex(
    canonicalJson({ effectKey: effect.effectKey, status: effect.status, holder: effect.holder }),
  );

export class EffectEvents {
  readonly #o: EffectEventsOptions;

  constructor(options: EffectEventsOptions) {
    this.#o = options;
  }

  /** Makes sure a finished effect's event exists; returns the record with its seq. */
  async ensure(
    tenant: string,
    stream: string,
    effect: EffectRecord,
    fence?: number,
  ): Promise<EffectRecord> {
    if (effect.status === 'pending' || (effect.eventSeq ?? 0) > 0) return effect;
    const found =
      effect.eventSeq === undefined ? await this.#legacySeq(tenant, stream, effect) : undefined;
    const eventSeq = found ?? (await this.#append(tenant, stream, effect, fence));
    try {
      await this.#o.records.update(
        effectRecordKey(tenant, stream, effect.effectKey),
        { set: { eventSeq } },
        { conditions: [{ op: 'eq', attr: 'status', value: effect.status }] },
      );
    } catch (err) {
      // Only a concurrent call on the same effect can race here, keeping the same seq.
      if (!(err instanceof ConflictError)) throw err;
    }
    return { ...effect, eventSeq };
  }

  /** Step 2. */
  async #append(
    tenant: string,
    stream: string,
    effect: EffectRecord,
    fence?: number,
  ): Promise<number> {
    const outcome = await this.#o.appender.append({
      tenant,
      stream,
      events: [
        {
          type: typeOf(effect),
          // Everything a read serves of the finished effect (effect-binding.ts).
          payload: effectEventPayload(effect),
        },
      ],
      idempotency: {
        key: effectEventIdempotencyKey(effect.status, effect.effectKey),
        digest: digestOf(effect),
      },
      fence: fence === undefined ? undefined : { epoch: fence, checkpoint: false },
    });
    return outcome.response.firstSeq;
  }

  /** The seq of an event written by an earlier version, if it was written. */
  async #legacySeq(
    tenant: string,
    stream: string,
    effect: EffectRecord,
  ): Promise<number | undefined> {
    const key = legacyIdempotencyKey(tenant, `effect:${effect.effectKey}:${effect.status}`);
    const item = await this.#o.records.get(key);
    const stored = item && toIdempotency(item);
    // Another stream's record under this tenant-wide key is the old collision, not ours.
    if (stored && stored.stream === stream && stored.digest === digestOf(effect)) {
      return stored.body.firstSeq;
    }
    const type = typeOf(effect);
    let from: number | undefined; // from the first event retention kept
    for (;;) {
      const page = await this.#o.reader
        .readEvents(tenant, stream, { from, type, limit: 1000 })
        .catch((err: unknown) => {
          if (err instanceof StreamNotFoundError) return { events: [], next: undefined };
          throw err;
        });
      const hit = page.events.find(
        (e) => (e.payload as { effectKey?: unknown } | null)?.effectKey === effect.effectKey,
      );
      if (hit) return hit.seq;
      if (page.next === undefined) return undefined;
      from = page.next;
    }
  }
}
