import { TamperedLedgerError } from '../domain/errors.js';
import { decodeAnySnapshot } from '../domain/snapshot.js';
import { DELTA_EVENT, FORK_EVENT, type ForkPayload } from '../domain/state.js';
import type { MerkleState } from '../domain/state-v2/index.js';
import type { HeadRecord } from './layout.js';
import type { StateStore } from './state.js';

/**
 * Where a read by path finds the state at `at` of a v2 stream without hydrating it
 * (state-read.ts): a stored base snapshot or fork origin that IS the state at `at`, because
 * no delta or fork lies between it and `at`. Answers the state's v2 digest, checked against
 * the chain, so the chunks a walk reads from it (each checked against its hash) are the
 * state at `at`; or the whole tree when the base is a v1-encoded object (already in hand).
 * `undefined`: deltas lie in between (or something does not add up), and the caller
 * hydrates, which reports any tampering or divergence exactly as a whole read does.
 *
 * How the origin is tied to the chain:
 * - at or past the head's state seq (`stateSeq`, the last delta or fork): the base must sit
 *   at or past it too and record the head's digest (the head is checked against the chain
 *   end by the caller); no event is read.
 * - below it: the events from the base's own seq to `at` are read (verified by the Reader):
 *   the base's event must carry the base's chain hash and state digest, none after it may
 *   set the state. A base at the pruning point (its event is gone) is tied by the first event
 *   after it linking to its hash, like hydration does.
 * - a fork origin (no base): event 1 is the fork, verified, and names the root.
 */

export type Origin =
  | { seq: number; digest: string }
  | { seq: number; digest: string; tree: MerkleState };

const setsState = (type: string) => type === DELTA_EVENT || type === FORK_EVENT;

/** Whether no event in [from, to] sets the state; `first` checks the first event read. */
const noStateEvents = async (
  states: StateStore,
  tenant: string,
  stream: string,
  range: { from: number; to: number },
  first: (event: {
    seq: number;
    type: string;
    hash: string;
    prevHash: string;
    payload: unknown;
  }) => boolean,
): Promise<boolean> => {
  let next: number | undefined = range.from;
  let checked = false;
  while (next !== undefined && next <= range.to) {
    const page = await states.reader.readEvents(tenant, stream, {
      from: next,
      limit: Math.min(1000, range.to - next + 1),
    });
    for (const event of page.events) {
      if (event.seq > range.to) return true;
      if (!checked) {
        checked = true;
        if (!first(event)) return false;
        continue;
      }
      if (setsState(event.type)) return false;
    }
    if (page.events.length === 0) break;
    next = page.next;
  }
  return checked;
};

/** The state at `at` as a stored origin, or undefined (hydrate instead). */
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
  if (at >= head.stateSeq) {
    if (base.seq < head.stateSeq || base.stateDigest !== head.stateDigest) return undefined;
  } else {
    const own = base.seq > floor;
    const tied = await noStateEvents(
      states,
      tenant,
      stream,
      { from: own ? base.seq : base.seq + 1, to: at },
      (e) =>
        own
          ? e.seq === base.seq &&
            e.hash === base.hash &&
            setsState(e.type) &&
            (e.payload as { stateDigest?: unknown }).stateDigest === base.stateDigest
          : e.seq === base.seq + 1 && e.prevHash === base.hash && !setsState(e.type),
    );
    // A base at the pruning point read at its own seq: nothing after it to tie it by, and
    // hydration trusts its index record there too (the pruning point is where it starts).
    if (!tied && !(base.seq === at && !own)) return undefined;
  }
  const stored = await states.snapshots.objects.get(base.objectKey);
  if (!stored)
    throw new TamperedLedgerError(Math.max(base.seq, 1), `snapshot ${base.objectKey} is missing`);
  const decoded = decodeAnySnapshot(stored.body, {
    tenant,
    stream,
    seq: base.seq,
    stateDigest: base.stateDigest,
    hash: base.hash,
    digestVersion: 2,
  });
  if ('state' in decoded) {
    return decoded.merkle
      ? { seq: base.seq, digest: base.stateDigest, tree: decoded.merkle }
      : undefined;
  }
  if (decoded.root.digest !== base.stateDigest) {
    throw new TamperedLedgerError(
      Math.max(base.seq, 1),
      'snapshot chunks do not hold the state its digest names',
    );
  }
  return { seq: base.seq, digest: base.stateDigest };
};

/** A stream opened by a fork stored as chunks, with no delta from it up to `at`. */
const forkOrigin = async (
  states: StateStore,
  tenant: string,
  stream: string,
  at: number,
  head: HeadRecord,
): Promise<Origin | undefined> => {
  if ((head.prunedSeq ?? 0) >= 1) return undefined;
  let root: ForkPayload['root'];
  let digest = '';
  const first = (e: { seq: number; type: string; payload: unknown }) => {
    if (e.seq !== 1 || e.type !== FORK_EVENT) return false;
    const payload = e.payload as ForkPayload;
    root = payload.root;
    digest = payload.stateDigest;
    return root !== undefined;
  };
  const to = at >= head.stateSeq ? 1 : at;
  if (at >= head.stateSeq && head.stateSeq !== 1) return undefined;
  if (!(await noStateEvents(states, tenant, stream, { from: 1, to }, first)) || !root) {
    return undefined;
  }
  if (at >= head.stateSeq && digest !== head.stateDigest) return undefined;
  if (root.digest !== digest) {
    throw new TamperedLedgerError(1, 'the fork origin does not hold the state its digest names');
  }
  return { seq: 1, digest };
};
