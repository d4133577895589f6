import type { HeadRecord } from '../chain/layout.js';
import { eventsIn, setsState } from '../chain/state-binding.js';
import { TamperedObjectError } from '../chain/tampered.js';
import { TamperedLedgerError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { decodeAnySnapshot } from '../domain/snapshot.js';
import { FORK_EVENT, type ForkPayload } from '../domain/state.js';
import type { MerkleState } from '../domain/state-v2/index.js';
import { openSnapshot } from './snapshot-seal.js';
import type { StateStore } from './state.js';

/**
 * Where a read by path of a v2 stream starts from without hydrating (state-read.ts): the
 * stored base snapshot or fork origin at or below `at`, its digest checked against the chain,
 * and the delta events after it up to `at` (verified by the Reader), which the caller applies
 * to a partial tree. `undefined`: something does not add up (an edited index record, a base
 * that does not link), and the caller hydrates, which reports it exactly as a whole read does.
 *
 * How the origin is tied to the chain (state-binding.ts): at or past the head's stateSeq, the
 * head's stateSeq and digest are checked against the chain first (once per head), then the base is bound to the event at its
 * stateSeq (its recorded digest, no delta or fork after it up to the base, the base's chain
 * hash at its seq), reading the events from its stateSeq up to `at` (no further than the
 * head's stateSeq) in one read. A fork origin (no base): event 1 is the fork, verified, and
 * names the root. A forged base or head is ErrTamperedLedger, never a fallback.
 */

export interface Origin {
  /** A base snapshot or a fork's origin: what its chunks are, should one fail. */
  object: 'snapshot' | 'fork-origin';
  /** Seq of the base or fork. */
  seq: number;
  /** Its state digest (v2), the root of its chunks. */
  digest: string;
  /** A base stored as one JSON object: its whole tree, already in hand. */
  tree?: MerkleState;
  /** The delta events after it, up to `at`, in order. */
  deltas: LedgerEvent[];
}

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
  // Reads at or past the head's stateSeq rely on it (no delta after it up to `at`): checked.
  if (at >= head.stateSeq) await states.headStates.check(tenant, stream, head);
  const to = Math.min(at, head.stateSeq);
  const bound = await states.boundBaseAtOrBefore(tenant, stream, at, head, {
    to,
    headChecked: true,
  });
  if (!bound) return forkOrigin(states, tenant, stream, at, head);
  const { base } = bound;
  if (bound.after[0] !== undefined && bound.after[0].prevHash !== base.hash) return undefined;
  const deltas = deltasOf(bound.after);
  if (!deltas) return undefined;
  const stored = await states.snapshots.objects.get(base.objectKey);
  const bad = (why: string, cause?: unknown) =>
    new TamperedObjectError(
      'snapshot',
      { firstBadSeq: Math.max(base.seq, 1), seq: base.seq },
      why,
      cause === undefined ? undefined : { cause },
    );
  if (!stored) throw bad(`snapshot ${base.objectKey} is missing`);
  // A stream sealed at rest: its base opens only with the key (ErrUnavailable without).
  const contentKey = (await states.reader.sealedKeys(tenant, stream, head))?.keys.content;
  let decoded: ReturnType<typeof decodeAnySnapshot>;
  try {
    const where = { tenant, stream, key: base.objectKey, seq: base.seq };
    decoded = decodeAnySnapshot(openSnapshot(stored.body, where, contentKey), {
      tenant,
      stream,
      seq: base.seq,
      stateDigest: base.stateDigest,
      hash: base.hash,
      digestVersion: 2,
      ...(base.stateSeq === undefined ? {} : { stateSeq: base.stateSeq }),
    });
  } catch (err) {
    if (err instanceof TamperedLedgerError) throw bad(err.message, err);
    throw err;
  }
  const object = 'snapshot' as const;
  if ('state' in decoded) {
    if (!decoded.merkle) return undefined;
    return { object, seq: base.seq, digest: base.stateDigest, tree: decoded.merkle, deltas };
  }
  if (decoded.root.digest !== base.stateDigest) {
    throw bad('snapshot chunks do not hold the state its digest names');
  }
  return { object, seq: base.seq, digest: base.stateDigest, deltas };
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
  const [first, ...after] = await eventsIn(
    states.reader,
    tenant,
    stream,
    1,
    Math.min(at, head.stateSeq),
  );
  if (first?.seq !== 1 || first.type !== FORK_EVENT) return undefined;
  const payload = first.payload as unknown as ForkPayload;
  const deltas = deltasOf(after);
  if (!payload.root || !deltas) return undefined;
  if (payload.root.digest !== payload.stateDigest) {
    throw new TamperedObjectError(
      'fork-origin',
      { firstBadSeq: 1, seq: 0 },
      'the fork origin does not hold the state its digest names',
    );
  }
  return { object: 'fork-origin', seq: 1, digest: payload.stateDigest, deltas };
};
