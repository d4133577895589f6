import { TamperedLedgerError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { decodeAnySnapshot } from '../domain/snapshot.js';
import { DELTA_EVENT, FORK_EVENT, type ForkPayload } from '../domain/state.js';
import type { MerkleState } from '../domain/state-v2/index.js';
import type { HeadRecord } from './layout.js';
import type { StateStore } from './state.js';

/**
 * Where a read by path of a v2 stream starts from without hydrating (state-read.ts): the
 * stored base snapshot or fork origin at or below `at`, its digest checked against the chain,
 * and the delta events after it up to `at` (verified by the Reader), which the caller applies
 * to a partial tree. `undefined`: something does not add up (an edited index record, a base
 * that does not link), and the caller hydrates, which reports it exactly as a whole read does.
 *
 * How the origin is tied to the chain:
 * - when no delta or fork lies after the base (the head's `stateSeq`, its last delta or fork,
 *   is at or below the base) and `at` is past it: the base must record the head's digest (the
 *   head is checked against the chain end by the caller); no event is read.
 * - otherwise the events from the base's own seq up to `at` (no further than `stateSeq`) are
 *   read: the base's event must carry the base's chain hash and state digest. A base at the
 *   pruning point (its event is gone) is tied by the first event after it linking to its hash,
 *   as hydration does, and read at its own seq it is trusted as hydration trusts it.
 * - a fork origin (no base): event 1 is the fork, verified, and names the root.
 */

export interface Origin {
  /** Seq of the base or fork. */
  seq: number;
  /** Its state digest (v2), the root of its chunks. */
  digest: string;
  /** A base stored as one JSON object: its whole tree, already in hand. */
  tree?: MerkleState;
  /** The delta events after it, up to `at`, in order. */
  deltas: LedgerEvent[];
}

const setsState = (type: string) => type === DELTA_EVENT || type === FORK_EVENT;

/** The verified events [from, to]. */
const eventsIn = async (
  states: StateStore,
  tenant: string,
  stream: string,
  from: number,
  to: number,
): Promise<LedgerEvent[]> => {
  const events: LedgerEvent[] = [];
  let next: number | undefined = from;
  while (next !== undefined && next <= to) {
    const page = await states.reader.readEvents(tenant, stream, {
      from: next,
      limit: Math.min(1000, to - next + 1),
    });
    for (const event of page.events) if (event.seq <= to) events.push(event);
    if (page.events.length === 0) break;
    next = page.next;
  }
  return events;
};

/** The deltas among `events`, or undefined when a fork is among them. */
const deltasOf = (events: LedgerEvent[]): LedgerEvent[] | undefined => {
  const deltas = events.filter((e) => setsState(e.type));
  return deltas.some((e) => e.type === FORK_EVENT) ? undefined : deltas;
};

/** The state at `at` as a stored origin and the deltas after it, or undefined (hydrate). */
export const storedOrigin = async (
  states: StateStore,
  tenant: string,
  stream: string,
  at: number,
  head: HeadRecord,
): Promise<Origin | undefined> => {
  const floor = head.prunedSeq ?? 0;
  const base = await states.baseAtOrBefore(tenant, stream, at);
  if (!base) return forkOrigin(states, tenant, stream, at, head);
  const to = Math.min(at, head.stateSeq);
  let deltas: LedgerEvent[] | undefined = [];
  if (base.seq >= head.stateSeq) {
    if (base.stateDigest !== head.stateDigest) return undefined;
  } else if (base.seq > floor) {
    const [own, ...after] = await eventsIn(states, tenant, stream, base.seq, to);
    const recorded = (own?.payload as { stateDigest?: unknown } | undefined)?.stateDigest;
    if (own?.seq !== base.seq || own.hash !== base.hash || !setsState(own.type)) return undefined;
    if (recorded !== base.stateDigest) return undefined;
    deltas = deltasOf(after);
  } else if (base.seq < to) {
    const after = await eventsIn(states, tenant, stream, base.seq + 1, to);
    if (after[0]?.seq !== base.seq + 1 || after[0].prevHash !== base.hash) return undefined;
    deltas = deltasOf(after);
  }
  if (!deltas) return undefined;
  const stored = await states.snapshots.objects.get(base.objectKey);
  if (!stored) {
    throw new TamperedLedgerError(Math.max(base.seq, 1), `snapshot ${base.objectKey} is missing`);
  }
  const decoded = decodeAnySnapshot(stored.body, {
    tenant,
    stream,
    seq: base.seq,
    stateDigest: base.stateDigest,
    hash: base.hash,
    digestVersion: 2,
  });
  if ('state' in decoded) {
    if (!decoded.merkle) return undefined;
    return { seq: base.seq, digest: base.stateDigest, tree: decoded.merkle, deltas };
  }
  if (decoded.root.digest !== base.stateDigest) {
    throw new TamperedLedgerError(
      Math.max(base.seq, 1),
      'snapshot chunks do not hold the state its digest names',
    );
  }
  return { seq: base.seq, digest: base.stateDigest, deltas };
};

/** A stream opened by a fork stored as chunks, and the deltas after it up to `at`. */
const forkOrigin = async (
  states: StateStore,
  tenant: string,
  stream: string,
  at: number,
  head: HeadRecord,
): Promise<Origin | undefined> => {
  if ((head.prunedSeq ?? 0) >= 1 || head.stateSeq < 1) return undefined;
  const [first, ...after] = await eventsIn(states, tenant, stream, 1, Math.min(at, head.stateSeq));
  if (first?.seq !== 1 || first.type !== FORK_EVENT) return undefined;
  const payload = first.payload as unknown as ForkPayload;
  const deltas = deltasOf(after);
  if (!payload.root || !deltas) return undefined;
  if (payload.root.digest !== payload.stateDigest) {
    throw new TamperedLedgerError(1, 'the fork origin does not hold the state its digest names');
  }
  return { seq: 1, digest: payload.stateDigest, deltas };
};
