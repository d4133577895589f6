import {
  badCheckpoint,
  checkEntry,
  checkEntryAt,
  checkPage,
  type EntryClaim,
} from '../chain/label-binding.js';
import type { Reader } from '../chain/reader.js';
import { CKPT_PREFIX, ckptSk, labelKey, streamPk } from '../chain/storage-keys.js';
import { canonicalJson, type JsonValue } from '../domain/canonical.js';
import { InvalidInputError, NotFoundError, StreamNotFoundError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { DELTA_EVENT } from '../domain/state.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';

/**
 * Checkpoint labels and the checkpoint list (docs/records-v2.md), records beside the head in
 * the stream's own partition:
 *
 * | record           | sk                        | attributes                                            |
 * | ---------------- | ------------------------- | ----------------------------------------------------- |
 * | checkpoint label | `label#{label}`           | seq                                                   |
 * | checkpoint list  | `ckpt#{pad16(INV - seq)}` | seq, label, stateDigest, meta?, parentLabel?, parentSeq?, createdAt |
 *
 * Both are written by the commit transaction of the delta that carries the label, derived
 * from the delta's payload (so a writer rolling a dead writer's segment forward writes them
 * exactly as its writer would have). The label put is `notExists`: a label is unique in its
 * stream. `GET .../checkpoints/{label}` is two gets (the label's seq, then its list entry);
 * the list is one ascending query on the `ckpt#` prefix (newest first), its cost proportional
 * to the page. The label record holds only the seq: everything else is in the list entry,
 * once (a labelled checkpoint stored both in full before, ~45% of its records' bytes twice).
 * Label records written before hold everything themselves and are answered alone.
 */

/**
 * Labels (LangGraph checkpoint ids): 1..128 of these, so no label can form another sk. A label is a URL path segment (GET .../checkpoints/{label}) too, so it starts with a letter or a
 * digit: '.' and '..' are dot segments that URL normalization removes before routing.
 */
export const LABEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Canonical JSON bytes a checkpoint's `meta` may hold. */
export const MAX_META_BYTES = 16 * 1024;

export interface LabelRecord {
  label: string;
  seq: number;
  stateDigest: string;
  meta?: JsonValue;
  parentLabel?: string;
  parentSeq?: number;
  createdAt: number;
}

export interface CheckpointEntry {
  label: string;
  seq: number;
  meta?: JsonValue;
  parentLabel?: string;
}

/** The v2 fields of a delta payload this module reads. */
interface LabelledPayload {
  stateDigest?: unknown;
  label?: unknown;
  leaves?: unknown;
  meta?: JsonValue;
  parentLabel?: unknown;
  baseSeq?: unknown;
}

export const checkLabel = (label: string, what = 'label'): string => {
  if (!LABEL_PATTERN.test(label)) {
    throw new InvalidInputError(
      `${what} must be 1..128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`,
    );
  }
  return label;
};

export const checkMeta = (meta: JsonValue): JsonValue => {
  const bytes = Buffer.byteLength(canonicalJson(meta), 'utf8');
  if (bytes > MAX_META_BYTES) {
    throw new InvalidInputError(
      `meta is ${bytes} bytes as canonical JSON; at most ${MAX_META_BYTES}`,
    );
  }
  return meta;
};

const optional = (fields: Record<string, JsonValue | undefined>) =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Record<
    string,
    JsonValue
  >;

/**
 * Commit step 4 of records-v2: the label and list records of the labelled deltas of a batch.
 * `labelIndexes` are the positions of the label puts among `ops` (a conflict there is a
 * duplicate label).
 */
export const labelOps = (
  tenant: string,
  stream: string,
  events: Array<{ seq: number; type: string; payload: () => unknown }>,
  now: number,
): TransactOp[] => {
  const ops: TransactOp[] = [];
  for (const event of events) {
    if (event.type !== DELTA_EVENT) continue;
    const p = event.payload() as LabelledPayload | null;
    if (typeof p?.label !== 'string' || typeof p.stateDigest !== 'string') continue;
    const parentLabel = typeof p.parentLabel === 'string' ? p.parentLabel : undefined;
    // Client JSON is kept as text: DynamoDB refuses an empty key in a map (LangGraph's
    // `parents` is keyed by namespace, the root one being ""), nests at most 32 deep and
    // rounds numbers past 38 digits. Readers also accept the `meta` map of older records.
    const metaJson = p.meta === undefined ? undefined : JSON.stringify(p.meta);
    const shared = optional({ metaJson, parentLabel });
    ops.push({
      kind: 'put',
      item: { ...labelKey(tenant, stream, p.label), seq: event.seq },
      conditions: [{ op: 'notExists' }],
    });
    ops.push({
      kind: 'put',
      item: {
        pk: streamPk(tenant, stream),
        sk: ckptSk(event.seq),
        label: p.label,
        seq: event.seq,
        stateDigest: p.stateDigest,
        ...shared,
        ...optional({ parentSeq: typeof p.baseSeq === 'number' ? p.baseSeq : undefined }),
        // The checkpoint it left, whose writes the next commit binds (frozen-writes.ts).
        ...optional({ leaves: typeof p.leaves === 'string' ? p.leaves : undefined }),
        createdAt: now,
      },
    });
  }
  return ops;
};

const metaOf = (item: Item): { meta?: JsonValue } =>
  typeof item.metaJson === 'string'
    ? { meta: JSON.parse(item.metaJson) as JsonValue }
    : item.meta === undefined
      ? {}
      : { meta: item.meta as JsonValue };

export const toLabel = (item: Item): LabelRecord => ({
  label: String(item.label),
  seq: Number(item.seq),
  stateDigest: String(item.stateDigest),
  ...metaOf(item),
  ...(typeof item.parentLabel === 'string' ? { parentLabel: item.parentLabel } : {}),
  ...(typeof item.parentSeq === 'number' ? { parentSeq: item.parentSeq } : {}),
  createdAt: Number(item.createdAt),
});

const claimOf = (item: Item): EntryClaim => ({
  ...toEntry(item),
  ...(typeof item.stateDigest === 'string' ? { stateDigest: item.stateDigest } : {}),
  ...(typeof item.parentSeq === 'number' ? { parentSeq: item.parentSeq } : {}),
});

const toEntry = (item: Item): CheckpointEntry => ({
  label: String(item.label),
  seq: Number(item.seq),
  ...metaOf(item),
  ...(typeof item.parentLabel === 'string' ? { parentLabel: item.parentLabel } : {}),
});

export interface ListCheckpointsOptions {
  /** Only checkpoints with a seq below this (exclusive); default: all. */
  before?: number;
  /** Page size, 1..1000 (default 100). */
  limit?: number;
  /** Only checkpoints whose meta has these top-level values (compared as canonical JSON). */
  meta?: Record<string, JsonValue>;
}

export interface CheckpointPage {
  checkpoints: CheckpointEntry[];
  /** Pass as `before` to read on; undefined when the list is exhausted. */
  next?: number;
}

/** Entries a filtered list scans at most for one page before it answers with `next`. */
const MAX_SCAN = 1000;

const matches = (entry: CheckpointEntry, filter: Array<[string, string]>): boolean => {
  if (filter.length === 0) return true;
  const meta = entry.meta;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return false;
  return filter.every(
    ([k, v]) => Object.hasOwn(meta, k) && canonicalJson(meta[k] as JsonValue) === v,
  );
};

export class CheckpointLabels {
  /**
   * `reader`: every entry served is checked against the delta that committed it, and list
   * pages for completeness (label-binding.ts); without one (unit tests of the records
   * alone), entries are served as stored.
   */
  constructor(
    readonly records: RecordStore,
    readonly reader?: Reader,
  ) {}

  async get(tenant: string, stream: string, label: string): Promise<LabelRecord> {
    const key = labelKey(tenant, stream, label);
    const item = await this.records.get(key);
    if (!item) throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
    let record: LabelRecord;
    if (typeof item.stateDigest === 'string') {
      record = toLabel(item); // written before
    } else {
      // Same commit as the label record: the entry is there (deleted with the stream only).
      const entry = await this.records.get({ pk: key.pk, sk: ckptSk(Number(item.seq)) });
      if (!entry || entry.label !== label) {
        if (this.reader)
          throw badCheckpoint(Number(item.seq), `the list entry of ${label} is gone`);
        throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
      }
      record = toLabel(entry);
    }
    if (this.reader) {
      if (record.label !== label) throw badCheckpoint(record.seq, `it is not labelled ${label}`);
      await checkEntryAt(this.reader, tenant, stream, record);
    }
    return record;
  }

  /**
   * The checkpoint a verified event is, when it is a labelled delta: its list entry, checked
   * against that event (no read of it again; undefined for any other event). A labelled delta
   * without its entry is ErrTamperedLedger, as in a list page.
   */
  async ofEvent(
    tenant: string,
    stream: string,
    event: LedgerEvent,
  ): Promise<LabelRecord | undefined> {
    const label = (event.payload as LabelledPayload | null)?.label;
    if (event.type !== DELTA_EVENT || typeof label !== 'string') return undefined;
    const entry = await this.records.get({ pk: streamPk(tenant, stream), sk: ckptSk(event.seq) });
    if (!entry) {
      // Label records written before held everything themselves (see above).
      const own = await this.records.get(labelKey(tenant, stream, label));
      if (typeof own?.stateDigest !== 'string')
        throw badCheckpoint(event.seq, 'its list entry is missing');
      checkEntry(claimOf(own), event);
      return toLabel(own);
    }
    checkEntry(claimOf(entry), event);
    return toLabel(entry);
  }

  async exists(tenant: string, stream: string, label: string): Promise<boolean> {
    return (await this.records.get(labelKey(tenant, stream, label))) !== undefined;
  }

  /**
   * Newest first. Unfiltered, one query of `limit` items; with a meta filter it scans at most
   * MAX_SCAN entries per call and answers `next` where it stopped (the cost of a page stays
   * bounded; a sparse filter takes more calls).
   */
  async list(
    tenant: string,
    stream: string,
    o: ListCheckpointsOptions = {},
  ): Promise<CheckpointPage> {
    const limit = o.limit ?? 100;
    const filter = Object.entries(o.meta ?? {}).map(([k, v]): [string, string] => [
      k,
      canonicalJson(v),
    ]);
    // No stream: no entries either (as before); a deleted head still fails closed (headItem).
    const head = await this.reader?.head(tenant, stream).catch((err: unknown) => {
      if (err instanceof StreamNotFoundError) return undefined;
      throw err;
    });
    const floor = head?.prunedSeq ?? 0;
    const claims: EntryClaim[] = [];
    const answer = async (page: CheckpointPage): Promise<CheckpointPage> => {
      if (!this.reader || !head) return page;
      // The page covers [its lowest scanned seq, before) (down to the floor when it is the
      // last): every labelled delta there must be among the entries scanned.
      const to = Math.min(o.before === undefined ? head.seq : o.before - 1, head.seq);
      const from = page.next === undefined ? floor + 1 : Math.min(...claims.map((c) => c.seq));
      await checkPage(this.reader, tenant, stream, { from, to }, claims);
      return page;
    };
    const out: CheckpointEntry[] = [];
    let after = o.before === undefined ? undefined : ckptSk(o.before);
    let scanned = 0;
    for (;;) {
      const want = filter.length === 0 ? limit - out.length : Math.min(MAX_SCAN - scanned, 100);
      const page = await this.records.query(streamPk(tenant, stream), {
        skPrefix: CKPT_PREFIX,
        after,
        limit: want,
      });
      for (const item of page.items) {
        const entry = toEntry(item);
        // Entries at or below the pruning point: their deltas are gone, nothing binds them.
        if (entry.seq <= floor && this.reader) return answer({ checkpoints: out });
        scanned++;
        claims.push(claimOf(item));
        if (matches(entry, filter)) out.push(entry);
        if (out.length >= limit) {
          const more = page.next !== undefined || item !== page.items.at(-1);
          return answer(more ? { checkpoints: out, next: entry.seq } : { checkpoints: out });
        }
      }
      if (page.next === undefined) return answer({ checkpoints: out });
      after = page.next;
      const last = page.items.at(-1);
      if (scanned >= MAX_SCAN && last) return answer({ checkpoints: out, next: Number(last.seq) });
    }
  }
}
