import type { HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { eventsIn, setsState } from '../chain/state-binding.js';
import { labelOfWriteSk, PENDING_WRITE_PREFIX, streamPk } from '../chain/storage-keys.js';
import { badWrites, bindingOf, leavesOf, writesBoundOf } from '../chain/writes-binding.js';
import type { JsonValue } from '../domain/canonical.js';
import { InvalidInputError, NotFoundError, PrunedError } from '../domain/errors.js';
import { pendingWritesDigest } from '../domain/pending-writes.js';
import { DELTA_EVENT, type DeltaOp, type DeltaPayload } from '../domain/state.js';
import { splitPointer, valueAt } from '../domain/state-v2/pointer.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import type { StateCache } from './checkpoint.js';
import type { MemoryAccount } from './memory-pool.js';
import { mergeWrites, type PendingWrite } from './pending-writes.js';
import type { StateStore } from './state.js';
import { readStateValue } from './state-read.js';

/**
 * A checkpoint's channel histories in one read (`GET .../channel-history`, LangGraph's
 * `getDeltaChannelHistory`): for each channel, walking the checkpoint's ancestors along the
 * labels' parent chain (its parent first), the pending writes of that channel on each, up to
 * and including the nearest ancestor whose state holds the channel's value at
 * `{seedAt}/{channel}`, whose value there is the seed; without one, the walk reaches the root
 * and there is no seed. The writes come oldest ancestor first, each checkpoint's in
 * (task path, task id, idx) order: the order LangGraph replays them in.
 *
 * One pass over the stream's verified events (the kept chain: the labels, their parents and
 * the ops, from which whether an ancestor's state holds a path is worked out without
 * hydrating it), one query of the stream's pending writes, and one read by path per seed.
 * Bound (docs/ledger-format.md, "Binding rule"): the parent chain is the deltas' own
 * `parentLabel`s; each ancestor's writes are digested and compared with the last event that
 * bound them, and an ancestor without one must be the tip, the checkpoint the tip left, or
 * written before the binding (frozen-writes.ts); the seeds are read from the hydrated, re-hashed
 * state. A mismatch is ErrTamperedLedger; a write bound while this read ran reads again.
 */

export const MAX_HISTORY_CHANNELS = 64;
const ATTEMPTS = 3;

export interface HistoryRequest {
  tenant: string;
  stream: string;
  /** The checkpoint; default: the head's state's. */
  label?: string;
  channels: string[];
  /** The object (RFC 6901 pointer) holding each channel's value by name; default the root. */
  seedAt?: string;
  memory?: MemoryAccount;
}

export interface ChannelHistory {
  writes: PendingWrite[];
  /** The seed: where it was found and the value there; absent when the walk reached the root. */
  seed?: { label: string; seq: number; value: JsonValue };
}

interface Labelled {
  seq: number;
  parentLabel?: string;
  writesBound: boolean;
}

/** Whether a path is there: known, or to be read (a fork's origin, the pruning point). */
type Presence = boolean | 'read';

const escapeKey = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/** Whether `path` is there after `op`, given whether it was before. */
const presenceAfter = (before: Presence, op: DeltaOp, path: string): Presence => {
  if (op.path === path) return op.op === 'set';
  if (path.startsWith(`${op.path}/`)) {
    if (op.op === 'delete') return false;
    if (!('value' in op)) return 'read'; // set by ref: its value is in chunks
    const rest = splitPointer(path.slice(op.path.length)) ?? [];
    return valueAt(op.value, rest) !== undefined;
  }
  // A change below the path needs the path there (else the delta would not have applied).
  if (op.path.startsWith(`${path}/`)) return true;
  return before;
};

export class DeltaHistory {
  constructor(
    readonly deps: {
      reader: Reader;
      records: RecordStore;
      states: StateStore;
      cache?: StateCache;
    },
  ) {}

  async read(req: HistoryRequest): Promise<Record<string, ChannelHistory>> {
    const channels = [...new Set(req.channels)];
    if (channels.length > MAX_HISTORY_CHANNELS) {
      throw new InvalidInputError(`at most ${MAX_HISTORY_CHANNELS} channels`);
    }
    if (channels.length === 0) return {};
    const seedAt = req.seedAt ?? '';
    if (splitPointer(seedAt) === undefined) {
      throw new InvalidInputError('seedAt must be an RFC 6901 pointer ("" or /a/b)');
    }
    for (let attempt = 1; ; attempt++) {
      const head = await this.deps.reader.head(req.tenant, req.stream);
      try {
        return await this.#read(req, head, channels, seedAt);
      } catch (err) {
        // Writes bound (a hefesto.writes event) after the head this read went by: read again.
        if (attempt >= ATTEMPTS) throw err;
        const now = await this.deps.reader.head(req.tenant, req.stream);
        if (now.seq === head.seq) throw err;
      }
    }
  }

  async #read(
    req: HistoryRequest,
    head: HeadRecord,
    channels: string[],
    seedAt: string,
  ): Promise<Record<string, ChannelHistory>> {
    const { tenant, stream } = req;
    const floor = head.prunedSeq ?? 0;
    const events =
      head.seq > floor ? await eventsIn(this.deps.reader, tenant, stream, floor + 1, head.seq) : [];
    const labels = new Map<string, Labelled>();
    const bindings = new Map<string, string>();
    const deltas = new Map<number, { base: number; ops: DeltaOp[] } | 'fork'>();
    let stateSeq = floor;
    let tip: string | undefined;
    let tipLeaves: string | undefined;
    for (const event of events) {
      const binding = bindingOf(event);
      if (binding) bindings.set(binding.label, binding.digest);
      if (!setsState(event.type)) continue;
      const p = event.payload as Partial<DeltaPayload> | null;
      if (event.type === DELTA_EVENT) {
        deltas.set(event.seq, { base: p?.baseSeq ?? stateSeq, ops: p?.ops ?? [] });
      } else deltas.set(event.seq, 'fork');
      tip = typeof p?.label === 'string' ? p.label : undefined;
      tipLeaves = event.type === DELTA_EVENT ? leavesOf(event) : undefined;
      if (tip !== undefined) {
        labels.set(tip, {
          seq: event.seq,
          ...(typeof p?.parentLabel === 'string' ? { parentLabel: p.parentLabel } : {}),
          writesBound: writesBoundOf(event),
        });
      }
      stateSeq = event.seq;
    }
    const target = req.label ?? tip;
    const own = target === undefined ? undefined : labels.get(target);
    if (!own) {
      if (target !== undefined && floor > 0) throw new PrunedError(stream, floor);
      throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${target ?? '(head)'}`);
    }
    const ancestors: Array<{ label: string } & Labelled> = [];
    const seen = new Set<string>([target as string]);
    for (let at = own.parentLabel; at !== undefined && !seen.has(at); ) {
      const a = labels.get(at);
      if (!a) break; // pruned away: the walk ends there, as a getTuple of it would
      seen.add(at);
      ancestors.push({ label: at, ...a });
      at = a.parentLabel;
    }
    const paths = new Map(channels.map((ch) => [ch, `${seedAt}/${escapeKey(ch)}`]));
    const presence = this.#presence(deltas, floor, [...paths.values()]);
    const stored = await this.#writes(tenant, stream, new Set(ancestors.map((a) => a.label)));
    const keys = await this.deps.reader.sealedKeys(tenant, stream, head);
    const opening = { tenant, stream, seq: head.seq, contentKey: keys?.keys.content };
    const out: Record<string, ChannelHistory> = {};
    const open = new Map(channels.map((ch) => [ch, [] as PendingWrite[][]]));
    for (const a of ancestors) {
      if (open.size === 0) break;
      const writes = mergeWrites(stored.get(a.label) ?? [], a.label, opening);
      const bound = bindings.get(a.label);
      if (bound !== undefined) {
        if (pendingWritesDigest(writes) !== bound) {
          throw badWrites(a.seq, a.label, 'they are not the writes the chain committed');
        }
      } else if (a.writesBound && a.label !== tip && a.label !== tipLeaves) {
        throw badWrites(a.seq, a.label, 'the checkpoint was left but no event binds its writes');
      }
      for (const [ch, blocks] of open) {
        blocks.push(writes.filter((w) => w.channel === ch));
        const path = paths.get(ch) as string;
        const value = await this.#seed(req, presence(a.seq, path), a.seq, path);
        if (value === undefined) continue;
        out[ch] = { writes: blocks.reverse().flat(), seed: { label: a.label, seq: a.seq, value } };
        open.delete(ch);
      }
    }
    for (const [ch, blocks] of open) out[ch] = { writes: blocks.reverse().flat() };
    return out;
  }

  /** The value at `path` in the state at `seq`, when it is there (read only then). */
  async #seed(req: HistoryRequest, there: Presence, seq: number, path: string) {
    if (there === false) return undefined;
    try {
      const { value } = await readStateValue(
        this.deps.states,
        { tenant: req.tenant, stream: req.stream, at: seq, path, memory: req.memory },
        { cache: this.deps.cache },
      );
      return value;
    } catch (err) {
      if (there === 'read' && err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  /**
   * Whether each path is in the state at a state-setting seq, from the ops along the deltas'
   * bases: {} before the first event, to be read at a fork or at the pruning point.
   */
  #presence(
    deltas: Map<number, { base: number; ops: DeltaOp[] } | 'fork'>,
    floor: number,
    paths: string[],
  ): (seq: number, path: string) => Presence {
    const memo = new Map<number, Map<string, Presence>>();
    const start = new Map(paths.map((p): [string, Presence] => [p, floor > 0 ? 'read' : false]));
    for (const [seq, d] of [...deltas].sort(([a], [b]) => a - b)) {
      if (d === 'fork') {
        memo.set(seq, new Map(paths.map((p) => [p, 'read'])));
        continue;
      }
      const before = memo.get(d.base) ?? start;
      const after = new Map<string, Presence>();
      for (const path of paths) {
        let there = before.get(path) ?? 'read';
        for (const op of d.ops) there = presenceAfter(there, op, path);
        after.set(path, there);
      }
      memo.set(seq, after);
    }
    return (seq, path) => memo.get(seq)?.get(path) ?? 'read';
  }

  /** The stored pending writes of `labels`, by label: one query of the stream's. */
  async #writes(tenant: string, stream: string, labels: Set<string>): Promise<Map<string, Item[]>> {
    const out = new Map<string, Item[]>();
    if (labels.size === 0) return out;
    let after: string | undefined;
    do {
      const page = await this.deps.records.query(streamPk(tenant, stream), {
        skPrefix: PENDING_WRITE_PREFIX,
        after,
        limit: 1000,
      });
      for (const item of page.items) {
        const label = labelOfWriteSk(item.sk);
        if (!labels.has(label)) continue;
        const items = out.get(label) ?? [];
        items.push(item);
        out.set(label, items);
      }
      after = page.next;
    } while (after !== undefined);
    return out;
  }
}
