import type { JsonValue } from '../domain/canonical.js';
import type { Item } from '../ports/record-store.js';

/** The shapes of exactly-once effects (effects.ts) and their ledger events (effect-events.ts). */

export const EFFECT_COMPLETED = 'hefesto.effect.completed';
export const EFFECT_FAILED = 'hefesto.effect.failed';

export type EffectStatus = 'pending' | 'completed' | 'failed';

export interface EffectRecord {
  effectKey: string;
  /** The stream's incarnation when begun (absent: begun before the stream existed, or before incarnations). */
  incarnation?: string;
  kind: string;
  intent: JsonValue;
  compensation: JsonValue | null;
  sagaId: string | null;
  status: EffectStatus;
  holder: string;
  leaseExpiresAt: number;
  attempts: number;
  result: JsonValue | null;
  error: JsonValue | null;
  createdAt: number;
  finishedAt: number | null;
  /**
   * Seq of the effect's ledger event once written; 0 from the finish until then. Absent on
   * records finished before it was kept (their event is looked up once, then kept here).
   */
  eventSeq?: number;
}

export const toEffect = (item: Item): EffectRecord => item as unknown as EffectRecord;
