import { applyOps, type DeltaOp, type JsonObject } from '../domain/state.js';
import type { CheckpointLabel, PendingWrite } from './checkpoint-types.js';
import { ClientVerificationError } from './errors.js';
import type { Json, StateResult } from './types.js';

/**
 * What {@link HefestoClient.getCheckpointTuple} and {@link HefestoClient.getChannelHistory}
 * answer (`GET .../tuple`, `GET .../history`), and how a tuple's deltas are applied here.
 */

/**
 * The state a caller holds for a stream, sent so the server answers only what changed.
 *
 * @example
 * ```ts
 * const held: HeldState = { seq: t.seq, stateDigest: t.stateDigest, state: t.state };
 * const next = await client.getCheckpointTuple('run-1', { since: held });
 * ```
 */
export interface HeldState {
  seq: number;
  stateDigest: string;
  /** Changed in place when the server answers deltas (pass a copy to keep it as it is). */
  state: { [key: string]: Json };
}

/**
 * A checkpoint with its state and pending writes. `answer` says what the server sent:
 * `unchanged` (the held state is it: `state` is the held object), `deltas` (applied to the
 * held object, in place) or `state` (sent whole).
 *
 * @example
 * ```ts
 * const { checkpoint, state, writes, answer }: CheckpointTuple =
 *   await client.getCheckpointTuple('run-1', { label });
 * ```
 */
export interface CheckpointTuple extends Required<StateResult> {
  head: { seq: number; hash: string };
  /** null when the state read is not a labelled checkpoint. */
  checkpoint: CheckpointLabel | null;
  answer: 'unchanged' | 'deltas' | 'state';
  writes: PendingWrite[];
}

/**
 * The body of `GET .../tuple`: the state whole, or the deltas to apply to the held one.
 *
 * @example
 * ```ts
 * const body: TupleBody = await (await fetch(`${baseUrl}/v1/streams/run-1/tuple`)).json();
 * ```
 */
export type TupleBody = Omit<CheckpointTuple, 'state'> & {
  state?: { [key: string]: Json };
  deltas?: Array<{ seq: number; ops: DeltaOp[] }>;
};

/**
 * One channel's history along a checkpoint's ancestors: its pending writes, oldest first,
 * and the nearest ancestor's value (the seed), if one holds it.
 *
 * @example
 * ```ts
 * const { messages }: Record<string, ChannelHistory> =
 *   await client.getChannelHistory('run-1', { label, channels: ['messages'] });
 * ```
 */
export interface ChannelHistory {
  writes: PendingWrite[];
  seed?: { label: string; seq: number; value: Json };
}

/**
 * The tuple's state: the body's, or the held one made into it as the answer says (in place);
 * an answer that does not fit what is held is a ClientVerificationError.
 *
 * @example
 * ```ts
 * const tuple = tupleState(body, { seq: 4, stateDigest, state });
 * ```
 */
export const tupleState = (body: TupleBody, held: HeldState | undefined): CheckpointTuple => {
  const { deltas, state, ...rest } = body;
  if (body.answer === 'state') {
    if (state === undefined) throw new ClientVerificationError(body.seq, 'no state was sent');
    return { ...rest, state };
  }
  if (!held) throw new ClientVerificationError(body.seq, `"${body.answer}" for no held state`);
  if (body.answer === 'unchanged') {
    if (held.seq !== body.seq || held.stateDigest !== body.stateDigest) {
      throw new ClientVerificationError(body.seq, 'unchanged, but not the state held');
    }
    return { ...rest, state: held.state };
  }
  let at = held.seq;
  for (const d of deltas ?? []) {
    if (!(d.seq > at)) throw new ClientVerificationError(d.seq, 'deltas out of order');
    try {
      applyOps(held.state as JsonObject, d.ops);
    } catch (err) {
      throw new ClientVerificationError(d.seq, `its ops do not apply: ${(err as Error).message}`);
    }
    at = d.seq;
  }
  if (at !== body.seq) throw new ClientVerificationError(body.seq, 'the deltas stop short');
  return { ...rest, state: held.state };
};
