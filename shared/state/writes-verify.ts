import {
  LABEL_PREFIX,
  labelOfSk,
  labelOfWriteSk,
  PENDING_WRITE_PREFIX,
  streamPk,
} from '../chain/storage-keys.js';
import { badWrites } from '../chain/writes-binding.js';
import { pendingWritesDigest, type WritesBinding } from '../domain/pending-writes.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { mergeWrites } from './pending-writes.js';

/**
 * /verify's check of every checkpoint's pending writes (writes-binding.ts), from what the
 * chain walk saw: each checkpoint's writes are what the last event binding them committed,
 * its label record names that event, a checkpoint without a binding is the tip, the one the
 * tip left, or one written before the binding existed, and no writes are stored for a
 * checkpoint the kept chain does not hold. Costs two queries: every `pw#` record of the stream (values included) and every
 * label record.
 */

/** What the chain walk collects for the check. */
export interface ChainWrites {
  /** The pruning point: checkpoints at or below it are gone with their events. */
  floor: number;
  /** The head's seq as the walk read it: records bound after it are not judged. */
  headSeq: number;
  /** The head's state seq (the tip, when it is a labelled delta). */
  stateSeq: number;
  /** The checkpoint the tip left (its writes frozen, bound by the next commit). */
  tipLeaves?: string;
  /** The labelled deltas above the floor, by seq. */
  labelled: Map<number, { label: string; writesBound: boolean }>;
  /** The events binding writes above the floor, lowest seq first. */
  bindings: Array<WritesBinding & { seq: number }>;
}

const everyRecord = async (records: RecordStore, pk: string, skPrefix: string) => {
  const out: Item[] = [];
  let after: string | undefined;
  do {
    const page = await records.query(pk, { skPrefix, after, limit: 1000 });
    out.push(...page.items);
    after = page.next;
  } while (after !== undefined);
  return out;
};

export const verifyWrites = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  chain: ChainWrites,
  /** The stream's content key when it is sealed at rest, and the head's seq. */
  sealed: { seq: number; contentKey?: Uint8Array },
): Promise<void> => {
  const pk = streamPk(tenant, stream);
  const latest = new Map<string, WritesBinding & { seq: number }>();
  for (const b of chain.bindings) latest.set(b.label, b);
  const stored = new Map<string, Item[]>();
  for (const item of await everyRecord(records, pk, PENDING_WRITE_PREFIX)) {
    const label = labelOfWriteSk(item.sk);
    stored.set(label, [...(stored.get(label) ?? []), item]);
  }
  const labels = new Map<string, Item>();
  for (const item of await everyRecord(records, pk, LABEL_PREFIX)) {
    labels.set(labelOfSk(item.sk), item);
  }
  const digestOf = (label: string) =>
    pendingWritesDigest(mergeWrites(stored.get(label) ?? [], label, { tenant, stream, ...sealed }));
  const checkBound = (seq: number, label: string, b: WritesBinding & { seq: number }) => {
    if (labels.get(label)?.writesSeq !== b.seq) {
      throw badWrites(seq, label, `its label record does not name their binding at seq ${b.seq}`);
    }
    if (digestOf(label) !== b.digest) {
      throw badWrites(seq, label, `they are not the writes seq ${b.seq} committed`);
    }
  };
  // Bound (again) after the walk's head: changed since, judged by the next /verify.
  const judged = new Set<string>();
  for (const [label, item] of labels) {
    if (Number(item.writesSeq) > chain.headSeq || Number(item.seq) > chain.headSeq) {
      judged.add(label);
    }
  }
  for (const [seq, { label, writesBound }] of chain.labelled) {
    if (judged.has(label)) continue;
    judged.add(label);
    const b = latest.get(label);
    if (b) {
      checkBound(seq, label, b);
      continue;
    }
    if (labels.get(label)?.writesSeq !== undefined) {
      throw badWrites(seq, label, 'its label record names a binding the chain does not hold');
    }
    if (writesBound && seq !== chain.stateSeq && label !== chain.tipLeaves) {
      throw badWrites(seq, label, 'the checkpoint was left but no event binds its writes');
    }
  }
  // A checkpoint pruned away whose writes were bound after the pruning point: reads of them
  // answer ErrPruned, but what is stored is still what the chain bound.
  for (const [label, b] of latest) {
    if (judged.has(label)) continue;
    judged.add(label);
    checkBound(Number(labels.get(label)?.seq ?? 0), label, b);
  }
  for (const label of stored.keys()) {
    if (judged.has(label)) continue;
    const seq = Number(labels.get(label)?.seq ?? 0);
    if (labels.has(label) && seq <= chain.floor) continue; // gone with their checkpoint
    throw badWrites(seq, label, 'they are stored for a checkpoint the chain does not hold');
  }
};
