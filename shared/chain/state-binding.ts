import { TamperedLedgerError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { appliesOps, FORK_EVENT } from '../domain/state.js';
import { digestVersionOf, emptyStateDigest } from '../domain/state-digest.js';
import { headMismatch } from './chain-head.js';
import type { HeadRecord, SnapshotIndexRecord } from './layout.js';
import type { Reader } from './reader.js';
import { TamperedObjectError } from './tampered.js';

/**
 * How a base snapshot and the head's state digest are bound to the hash chain
 * (docs/ledger-format.md, "Binding rule"). A base is written at seqs that are often not
 * deltas (a drain at the head, retention at a segment's end), so its record and header name
 * `stateSeq`, the last state-setting event (delta or fork) at or before its seq. A base is
 * used only once the verified events [stateSeq, seq] show that event recording the base's
 * digest, no delta or fork after it, and the base's chain hash at its seq.
 *
 * - stateSeq 0 (no state-setting event yet): the base must be the empty state; above no
 *   pruning point a reader starts from {} instead (same events, nothing to trust).
 * - stateSeq at or below the pruning point: retention keeps the segments from the one
 *   holding it (compact-retention.ts), read through Reader.readSpan.
 * - records written before stateSeq was kept: bound by their own event when it is a delta
 *   or a fork (the checkpointer writes bases at its K-th delta); any other is `unbound`,
 *   and readers use an older base. A legacy base at the pruning point is tied to the kept
 *   chain by its hash only (the limit documented in docs/ledger-format.md).
 * A mismatch is ErrTamperedLedger naming the snapshot (or the head), never a divergence.
 */

/** A delta, a migration (docs/schema-evolution.md) or a fork. */
export const setsState = (type: string): boolean => appliesOps(type) || type === FORK_EVENT;

const recordedDigest = (event: LedgerEvent): unknown =>
  (event.payload as { stateDigest?: unknown } | null)?.stateDigest;

export const badBase = (seq: number, why: string, cause?: unknown) =>
  new TamperedObjectError(
    'snapshot',
    { firstBadSeq: Math.max(seq, 1), seq },
    `base snapshot at seq ${seq}: ${why}`,
    cause === undefined ? undefined : { cause },
  );

/** The verified events [from, to] above the pruning point, in order. */
export const eventsIn = async (
  reader: Reader,
  tenant: string,
  stream: string,
  from: number,
  to: number,
): Promise<LedgerEvent[]> => {
  const events: LedgerEvent[] = [];
  let next: number | undefined = from;
  while (next !== undefined && next <= to) {
    const page = await reader.readEvents(tenant, stream, {
      from: next,
      limit: Math.min(1000, to - next + 1),
    });
    for (const event of page.events) if (event.seq <= to) events.push(event);
    if (page.events.length === 0) break;
    next = page.next;
  }
  return events;
};

/** The verified events [from, to], through the kept segments when `from` is below the floor. */
const eventsAround = async (
  reader: Reader,
  tenant: string,
  stream: string,
  floor: number,
  from: number,
  to: number,
): Promise<LedgerEvent[]> =>
  from > floor
    ? eventsIn(reader, tenant, stream, from, to)
    : reader.readSpan(tenant, stream, from, to);

/**
 * Checks verified events [from, base.seq] (from: `bindingFrom(base)`) against a base.
 * 'unbound': a legacy base whose own event sets no state.
 */
export const checkBase = (
  base: SnapshotIndexRecord,
  events: LedgerEvent[],
): 'bound' | 'unbound' => {
  const last = events.at(-1);
  if (last?.seq !== base.seq) throw badBase(base.seq, 'the chain does not hold its seq');
  if (last.hash !== base.hash) throw badBase(base.seq, 'names another chain hash');
  if (base.stateSeq === undefined) {
    if (!setsState(last.type)) return 'unbound';
    if (recordedDigest(last) !== base.stateDigest) {
      throw badBase(base.seq, 'is not the state its event records');
    }
    return 'bound';
  }
  const [own, ...after] = events;
  if (own?.seq !== base.stateSeq || !setsState(own.type)) {
    throw badBase(base.seq, `its stateSeq ${base.stateSeq} is not a delta or a fork`);
  }
  if (recordedDigest(own) !== base.stateDigest) {
    throw badBase(base.seq, `is not the state seq ${base.stateSeq} records`);
  }
  if (after.some((e) => setsState(e.type))) {
    throw badBase(base.seq, `a delta lies between its stateSeq ${base.stateSeq} and its seq`);
  }
  return 'bound';
};

/** How a base is bound: its verified stateSeq (undefined: a legacy floor), or why not. */
export type Binding = { stateSeq: number | undefined; after: LedgerEvent[] } | 'unbound' | 'empty';

/** What a reader asks of bindBase besides the binding. */
export interface BindOptions {
  /** Answer the verified events (base.seq, to] too (one read for both). */
  to?: number;
  /** The head's state was checked against the chain (HeadStateCheck): a base at the head
   * naming the head's stateSeq, digest and hash needs no read. */
  headChecked?: boolean;
}

/**
 * Binds `base` to the chain (see above). 'empty': stateSeq 0 above no pruning point (start
 * from {}); 'unbound': a legacy base its own event does not bind (use an older one).
 */
export const bindBase = async (
  reader: Reader,
  tenant: string,
  stream: string,
  head: HeadRecord,
  base: SnapshotIndexRecord,
  options: BindOptions = {},
): Promise<Binding> => {
  const floor = head.prunedSeq ?? 0;
  const stateSeq = base.stateSeq;
  const to = options.to ?? base.seq;
  if (
    options.headChecked &&
    base.seq === head.seq &&
    base.hash === head.hash &&
    stateSeq === head.stateSeq &&
    base.stateDigest === head.stateDigest
  ) {
    return { stateSeq, after: [] };
  }
  const split = (events: LedgerEvent[]) => ({
    own: events.filter((e) => e.seq <= base.seq),
    after: events.filter((e) => e.seq > base.seq),
  });
  if (stateSeq === undefined && base.seq <= floor) {
    const after = to > base.seq ? await eventsIn(reader, tenant, stream, base.seq + 1, to) : [];
    return { stateSeq: undefined, after };
  }
  if (stateSeq !== undefined && (!Number.isSafeInteger(stateSeq) || stateSeq > base.seq)) {
    throw badBase(base.seq, `its stateSeq ${stateSeq} is not at or before it`);
  }
  if (stateSeq === 0) {
    if (base.stateDigest !== emptyStateDigest(digestVersionOf(head))) {
      throw badBase(base.seq, 'is not the empty state its stateSeq 0 names');
    }
    if (floor === 0) return 'empty';
    const after = to > base.seq ? await eventsIn(reader, tenant, stream, base.seq + 1, to) : [];
    return { stateSeq: 0, after };
  }
  const from = stateSeq ?? base.seq;
  let events: LedgerEvent[];
  try {
    events = await eventsAround(reader, tenant, stream, floor, from, Math.max(to, base.seq));
  } catch (err) {
    if (err instanceof TamperedObjectError || !(err instanceof TamperedLedgerError)) throw err;
    throw badBase(base.seq, `the events binding it (from seq ${from}) cannot be read`, err);
  }
  const { own, after } = split(events);
  if (checkBase(base, own) === 'unbound') return 'unbound';
  return { stateSeq: stateSeq ?? base.seq, after };
};

/**
 * The head's `stateSeq` and `stateDigest` checked against the chain: the event at stateSeq
 * records the digest (or, at 0, the digest is the empty state's), and no delta or fork lies
 * after it up to the head. The check is kept per stream by head hash, so a head is checked
 * once per process (a cold read: the segments from stateSeq to the head, one when the head's
 * segment holds its last checkpoint).
 */
export class HeadStateCheck {
  readonly #checked = new Map<string, string>();

  constructor(
    readonly reader: Reader,
    readonly maxEntries = 1024,
  ) {}

  async check(tenant: string, stream: string, head: HeadRecord): Promise<void> {
    const key = `${tenant}\u0000${stream}`;
    const mark = `${head.hash}\u0000${head.stateSeq}\u0000${head.stateDigest}`;
    if (this.#checked.get(key) === mark) return;
    const floor = head.prunedSeq ?? 0;
    const bad = (why: string) => headMismatch(head, `the head's state ${why}`);
    const { stateSeq } = head;
    if (!Number.isSafeInteger(stateSeq) || stateSeq < 0 || stateSeq > head.seq) {
      throw bad(`seq ${stateSeq} is not in the chain`);
    }
    let events: LedgerEvent[] = [];
    if (stateSeq === 0) {
      if (head.stateDigest !== emptyStateDigest(digestVersionOf(head))) {
        throw bad('digest is not the empty state at stateSeq 0');
      }
      if (floor === 0) events = await eventsIn(this.reader, tenant, stream, 1, head.seq);
    } else {
      try {
        events = await eventsAround(this.reader, tenant, stream, floor, stateSeq, head.seq);
      } catch (err) {
        if (err instanceof TamperedObjectError || !(err instanceof TamperedLedgerError)) throw err;
        throw bad(`event at seq ${stateSeq} cannot be read`);
      }
      const own = events[0];
      if (own?.seq !== stateSeq || !setsState(own.type)) {
        throw bad(`seq ${stateSeq} is not a delta or a fork`);
      }
      if (recordedDigest(own) !== head.stateDigest) {
        throw bad(`digest is not the one seq ${stateSeq} records`);
      }
      events = events.slice(1);
    }
    const later = events.find((e) => setsState(e.type));
    if (later) throw bad(`seq ${stateSeq} is not the last checkpoint (seq ${later.seq} is)`);
    this.#checked.delete(key);
    this.#checked.set(key, mark);
    if (this.#checked.size > this.maxEntries) {
      const oldest = this.#checked.keys().next().value;
      if (oldest !== undefined) this.#checked.delete(oldest);
    }
  }
}
