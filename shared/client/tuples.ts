import { applyOps, type DeltaOp, type JsonObject } from '../domain/state.js';
import type { CheckpointLabel, CheckpointList, PendingWrite } from './checkpoint-types.js';
import { ClientVerificationError } from './errors.js';
import type { Json, StateResult } from './types.js';

/**
 * What {@link HefestoClient.getCheckpointTuple} and {@link HefestoClient.getChannelHistory}
 * answer (`GET .../tuple`, `GET .../channel-history`), and how a tuple's deltas are applied here.
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

/**
 * A page of checkpoints with their states and pending writes, newest first, as
 * {@link HefestoClient.listCheckpointTuples} answers it (each state its own object).
 *
 * @example
 * ```ts
 * const { tuples, next }: TuplePage = await client.listCheckpointTuples('run-1', { limit: 10 });
 * ```
 */
export interface TuplePage {
  digestVersion: 1 | 2;
  tuples: Array<{
    checkpoint: CheckpointList['checkpoints'][number];
    seq: number;
    stateDigest: string;
    writes: PendingWrite[];
    state: { [key: string]: Json };
  }>;
  /** Pass as `before` to read on; null at the end. */
  next: number | null;
}

/** The body of `GET .../tuples`: states whole, or deltas from the older tuple after them. */
type TuplePageBody = Omit<TuplePage, 'tuples'> & {
  tuples: Array<
    Omit<TuplePage['tuples'][number], 'state'> & {
      state?: TuplePage['tuples'][number]['state'];
      deltas?: Array<{ seq: number; ops: DeltaOp[] }>;
    }
  >;
};

/**
 * A page's states, oldest first: each one sent whole, or the older one's copied and its
 * deltas applied; one that does not fit is a ClientVerificationError.
 *
 * @example
 * ```ts
 * const page = pageStates(await (await fetch(`${baseUrl}/v1/streams/run-1/tuples`)).json());
 * ```
 */
export const pageStates = (body: TuplePageBody): TuplePage => {
  const tuples: TuplePage['tuples'] = [];
  let older: TuplePage['tuples'][number] | undefined;
  for (let i = body.tuples.length - 1; i >= 0; i--) {
    const { deltas, state, ...rest } = body.tuples[i] as TuplePageBody['tuples'][number];
    let made = state;
    if (made === undefined) {
      if (!older) throw new ClientVerificationError(rest.seq, 'deltas, but no state before them');
      made = tupleState({ ...rest, answer: 'deltas', deltas } as unknown as TupleBody, {
        seq: older.seq,
        stateDigest: older.stateDigest,
        state: structuredClone(older.state),
      }).state;
    }
    older = { ...rest, state: made };
    tuples.push(older);
  }
  return { digestVersion: body.digestVersion, tuples: tuples.reverse(), next: body.next };
};
