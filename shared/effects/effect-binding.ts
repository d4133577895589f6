import type { Reader } from '../chain/reader.js';
import { eventsIn } from '../chain/state-binding.js';
import { EFFECT_PREFIX, streamPk } from '../chain/storage-keys.js';
import { TamperedObjectError } from '../chain/tampered.js';
import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import type { LedgerEvent } from '../domain/event.js';
import type { RecordStore } from '../ports/record-store.js';
import { EFFECT_COMPLETED, EFFECT_FAILED, type EffectRecord, toEffect } from './effect-model.js';

/**
 * A finished effect's record is bound to its ledger event (docs/ledger-format.md, "Binding
 * rule"): the record keeps the event's seq (`eventSeq`), and the event holds the effect's key,
 * kind, saga, outcome (result or error) and, since the binding, its intent and compensation.
 * A read that serves a finished effect (begin's stored outcome, the effect list, a saga's
 * compensations) checks the record against that event first; a mismatch is
 * ErrTamperedLedger naming `effect` and the event's seq, never the stored outcome. So is a
 * record stored under another effect's key, and (effects.ts) a begin that finds no record
 * while the key record of the effect's ledger event is stored: a finished effect whose record
 * was deleted is never run again.
 *
 * Unbound, and served as stored: pending effects (no event yet), a finished effect whose
 * event is not written or its seq not kept yet (`eventSeq` 0, or absent on records finished
 * before it was kept: the next call on the effect writes or finds it), one whose event was
 * pruned (at or below the pruning point), and the intent and compensation of effects whose
 * event was written before it held them.
 */

interface EffectPayload {
  effectKey?: unknown;
  kind?: unknown;
  sagaId?: unknown;
  result?: JsonValue;
  error?: JsonValue;
  intent?: JsonValue;
  compensation?: JsonValue;
}

export const badEffect = (seq: number, effectKey: string, why: string) =>
  new TamperedObjectError(
    'effect',
    { firstBadSeq: Math.max(seq, 1), seq },
    `effect ${effectKey} (event at seq ${seq}): ${why}`,
  );

const same = (a: JsonValue | undefined, b: JsonValue | undefined) =>
  canonicalJson(a ?? null) === canonicalJson(b ?? null);

/** The event's payload for a finished effect (effect-events.ts writes it). */
export const effectEventPayload = (effect: EffectRecord): Record<string, JsonValue> => ({
  effectKey: effect.effectKey,
  kind: effect.kind,
  sagaId: effect.sagaId,
  ...(effect.status === 'completed' ? { result: effect.result } : { error: effect.error }),
  intent: effect.intent ?? null,
  compensation: effect.compensation ?? null,
});

/** Why the record is not what `event` committed, or undefined when it is. */
export const effectMismatch = (
  record: EffectRecord,
  event: Pick<LedgerEvent, 'seq' | 'type' | 'payload'> | undefined,
): string | undefined => {
  const type = record.status === 'completed' ? EFFECT_COMPLETED : EFFECT_FAILED;
  const p = (event?.payload ?? null) as EffectPayload | null;
  if (event?.type !== type || p?.effectKey !== record.effectKey) {
    return `no ${type} event of it is at its seq`;
  }
  const outcome = record.status === 'completed' ? 'result' : 'error';
  if (
    p.kind !== record.kind ||
    (p.sagaId ?? null) !== (record.sagaId ?? null) ||
    !same(p[outcome], record[outcome]) ||
    ('intent' in p && !same(p.intent, record.intent)) ||
    ('compensation' in p && !same(p.compensation, record.compensation))
  ) {
    return 'its record is not what its event committed';
  }
  return undefined;
};

/** The pruning point of a head record as stored (0: none, or no head). */
export const floorOf = (head: { [attr: string]: unknown } | undefined): number =>
  typeof head?.prunedSeq === 'number' ? head.prunedSeq : 0;

/** Whether a record's event binds it now (see above: else it is served as stored). */
export const isBound = (record: EffectRecord, floor: number): boolean =>
  record.status !== 'pending' && (record.eventSeq ?? 0) > floor;

/**
 * Checks a finished effect against its event (one event read); unbound ones pass. `storedUnder`:
 * the effect key of the record's key, which the record must name (a record copied under
 * another effect's key is refused whatever its state).
 */
export const checkEffect = async (
  reader: Reader,
  tenant: string,
  stream: string,
  record: EffectRecord,
  floor: number,
  storedUnder: string = record.effectKey,
): Promise<void> => {
  if (record.effectKey !== storedUnder) {
    throw badEffect(
      record.eventSeq ?? 0,
      storedUnder,
      `its record is effect ${record.effectKey}'s`,
    );
  }
  if (!isBound(record, floor)) return;
  const seq = record.eventSeq as number;
  const [event] = await eventsIn(reader, tenant, stream, seq, seq);
  const why = effectMismatch(record, event?.seq === seq ? event : undefined);
  if (why) throw badEffect(seq, record.effectKey, why);
};

/**
 * /verify's check of the effects (see above), from the chain walk's effect events: each
 * finished record is what its event committed, and each event above the pruning point has
 * its record, finished and naming it (a deleted record is noticed here, not by the list,
 * which pages by effect key and cannot know which events its page should hold). One query:
 * every effect record of the stream.
 */
export const verifyEffects = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  chain: {
    floor: number;
    /** The head's seq as the walk read it: effects finished after it are not judged. */
    headSeq: number;
    events: ReadonlyArray<Pick<LedgerEvent, 'seq' | 'type' | 'payload'>>;
  },
): Promise<void> => {
  const { floor, headSeq, events } = chain;
  const effects = new Map<string, EffectRecord>();
  let after: string | undefined;
  do {
    const page = await records.query(streamPk(tenant, stream), {
      skPrefix: EFFECT_PREFIX,
      after,
      limit: 1000,
    });
    for (const item of page.items) {
      const e = toEffect(item);
      const storedUnder = item.sk.slice(EFFECT_PREFIX.length);
      if (e.effectKey !== storedUnder) {
        throw badEffect(e.eventSeq ?? 0, storedUnder, `its record is effect ${e.effectKey}'s`);
      }
      effects.set(e.effectKey, e);
    }
    after = page.next;
  } while (after !== undefined);
  const bySeq = new Map(events.map((e) => [e.seq, e]));
  for (const record of effects.values()) {
    if (!isBound(record, floor) || (record.eventSeq as number) > headSeq) continue;
    const seq = record.eventSeq as number;
    const why = effectMismatch(record, bySeq.get(seq));
    if (why) throw badEffect(seq, record.effectKey, why);
  }
  for (const event of events) {
    if (event.seq <= floor) continue;
    const key = String((event.payload as EffectPayload | null)?.effectKey);
    const record = effects.get(key);
    if (!record) throw badEffect(event.seq, key, 'its record is missing');
    if ((record.eventSeq ?? 0) > 0 && record.eventSeq !== event.seq) {
      throw badEffect(event.seq, key, `its record names another event (seq ${record.eventSeq})`);
    }
    const why = effectMismatch(record, event);
    if (why) throw badEffect(event.seq, key, why);
  }
};

/** Whether an event is a finished effect's. */
export const isEffectEvent = (type: string): boolean =>
  type === EFFECT_COMPLETED || type === EFFECT_FAILED;
