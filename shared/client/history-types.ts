import type { SignedTreeHead } from '../domain/signed-head.js';
import type { Json, LedgerEvent, StateValue } from './types.js';

/**
 * A change of a session's history (`POST /v1/streams/{id}/history`, docs/openai-agents.md):
 * `append_items` and `replace_suffix` are the OpenAI Agents SDK's history transactions;
 * `replace_history` sets the whole history; `pop` removes the last item; `clear` empties it
 * and forgets its operation ids.
 *
 * @example
 * ```ts
 * const change: HistoryChange = { type: 'append_items', items: [{ role: 'user', content: 'hi' }] };
 * ```
 */
export type HistoryChange =
  | { type: 'append_items'; items: Json[] }
  | { type: 'replace_suffix'; expectedSuffix: Json[]; replacement: Json[] }
  | { type: 'replace_history'; items: Json[] }
  | { type: 'pop' }
  | { type: 'clear' };

/**
 * What a history change answers: the seq of its delta, whether this call applied it (false:
 * its operation id was applied before, or it changes nothing), and a pop's item.
 *
 * @example
 * ```ts
 * const { applied, popped }: HistoryChangeResult = await client.changeHistory('s-1', { type: 'pop' });
 * ```
 */
export interface HistoryChangeResult {
  seq: number;
  applied: boolean;
  popped?: Json;
  /** The stream's incarnation the change was committed in. */
  incarnation?: string;
  /** The receipt: the signed tree head after the change (checked with `verify`). */
  treeHead?: SignedTreeHead;
}

/**
 * A page of a session's history: its last items, oldest first, and the seq they were read at.
 *
 * @example
 * ```ts
 * const { items }: HistoryPage = await client.getHistory('s-1', { limit: 10 });
 * ```
 */
export interface HistoryPage {
  seq: number;
  items: Json[];
  /**
   * With `proof`: the event that set the state read (its hash recomputable) and the Merkle
   * path of `/items` in that state (docs/openai-agents.md, "Verified reads").
   */
  proof?: { event: LedgerEvent } & (
    | { state: NonNullable<StateValue['proof']> }
    /** A stream on state digest v1 (no proof by path): the whole state the event digests. */
    | { whole: { [key: string]: Json } }
  );
  /** The schema version of the items, when above 1 (docs/schema-evolution.md, "Sessions"). */
  schema?: number;
}
