import { StreamNotFoundError, TamperedLedgerError } from '../domain/errors.js';
import { decodeSegment } from '../domain/segment.js';
import type { Item, RecordStore, TransactOp } from '../ports/record-store.js';
import { type HeadRecord, type SegmentIndexRecord, toHead, toSegmentIndex } from './layout.js';
import { headKey, SEGMENT_INDEX_PREFIX, segmentIndexKey, streamPk } from './storage-keys.js';
import { TamperedObjectError } from './tampered.js';

/**
 * The chain head as reads trust it. The head is checked against the chain end: the index
 * record of the segment ending at the head's seq must hold the head's hash (index records
 * never change their lastHash: a merge rewrites the record of its last segment in place,
 * keeping it). A head whose hash was edited, or a stream whose head was deleted while its
 * index records remain, is ErrTamperedLedger; the operator repair rebuilds the head from the
 * verified segments (repair.ts).
 *
 * A stream marked `deleting` (expired) answers ErrStreamNotFound: retention keeps that head
 * as a tombstone until every other object and record of the stream is gone, so a stream being
 * deleted never looks like one whose head was deleted.
 */

/**
 * The transaction check of a write beside the chain (a lease, an effect) that a deleted
 * stream must refuse, in the write's own transaction (no extra round trip): the head is not
 * marked `deleting`, and, when the writer read one, still of that incarnation (not deleted
 * and created again since). No head passes: a stream not created yet, or one whose deletion
 * finished (its partition went with it, so nothing of its past life is left to reach).
 */
export const liveHeadCheck = (
  tenant: string,
  stream: string,
  incarnation?: string,
): TransactOp => ({
  kind: 'check',
  key: headKey(tenant, stream),
  conditions: [
    { op: 'attrNotExists', attr: 'status' },
    ...(incarnation === undefined
      ? []
      : [{ op: 'eq' as const, attr: 'incarnation', value: incarnation }]),
  ],
});

/** The index and the objects disagree in a way a concurrent compaction can cause. */
export class LayoutRaceError extends TamperedLedgerError {}

export const headMismatch = (head: { seq: number }, why: string) =>
  new TamperedObjectError('head', { firstBadSeq: Math.max(head.seq, 1), seq: head.seq }, why);

export const headMissing = (first: SegmentIndexRecord) =>
  new TamperedObjectError(
    'head',
    { firstBadSeq: first.firstSeq, seq: first.firstSeq },
    'the stream has committed segments but no head (repair: hefesto repair STREAM)',
  );

/** The stream's first segment index record, if any (a committed stream has at least one). */
export const firstIndexRecord = async (
  records: RecordStore,
  tenant: string,
  stream: string,
): Promise<SegmentIndexRecord | undefined> => {
  const page = await records.query(streamPk(tenant, stream), {
    skPrefix: SEGMENT_INDEX_PREFIX,
    limit: 1,
  });
  const item = page.items[0];
  return item ? toSegmentIndex(item) : undefined;
};

/**
 * The head item, or undefined for a stream that does not exist. No head while index records
 * remain is a deleted head (ErrTamperedLedger), unless the head is there when read again: the
 * stream was created between the two reads.
 */
export const headItem = async (
  records: RecordStore,
  tenant: string,
  stream: string,
): Promise<Item | undefined> => {
  const item = await records.get(headKey(tenant, stream));
  if (item) return item;
  const orphan = await firstIndexRecord(records, tenant, stream);
  if (!orphan) return undefined;
  const again = await records.get(headKey(tenant, stream));
  if (again) return again;
  throw headMissing(orphan);
};

/**
 * The head record as stored. None: ErrStreamNotFound, unless index records remain (only a
 * commit writes them, together with the head; retention deletes the head last): then the
 * head was deleted, ErrTamperedLedger. Marked `deleting`: ErrStreamNotFound.
 */
export const readTrustedHead = async (
  records: RecordStore,
  tenant: string,
  stream: string,
): Promise<HeadRecord> => {
  const item = await headItem(records, tenant, stream);
  if (!item) throw new StreamNotFoundError(stream);
  const head = toHead(item);
  if (head.status === 'deleting') throw new StreamNotFoundError(stream);
  return head;
};

/**
 * Checks a head against the chain end: the index record at head.seq must end at head.hash
 * (or, when everything up to the head was pruned, the pruning hash must be the head's).
 * No record there while the head still stands at that seq is tampering too; a head that moved
 * meanwhile (an append, a pruning) is read and checked again, at most `attempts` times.
 * Answers the head it checked.
 */
export const checkHead = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  read: HeadRecord,
  attempts = 5,
): Promise<HeadRecord> => {
  let head = read;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (head.prunedSeq !== undefined && head.prunedSeq >= head.seq) {
      if (head.prunedHash === head.hash) return head;
      throw headMismatch(head, 'the head is not the hash recorded at its pruning point');
    }
    const item = await records.get(segmentIndexKey(tenant, stream, head.seq));
    if (item) {
      if (toSegmentIndex(item).lastHash === head.hash) return head;
      throw headMismatch(head, 'the head hash is not the end of the chain');
    }
    const now = await readTrustedHead(records, tenant, stream);
    if (now.seq === head.seq && now.prunedSeq === head.prunedSeq && now.hash === head.hash) {
      throw headMismatch(head, 'no segment ends at the head');
    }
    head = now;
  }
  throw new LayoutRaceError(head.seq, 'the head kept moving while it was checked');
};

/**
 * Whether the uncommitted segment `body` at head+1, which does not chain from `head`, can
 * never be committed, so that an append may replace it (If-Match) instead of failing on it
 * forever: it must be well formed for this stream, chain from another hash, and `head` must be
 * the chain end now (its index record ends at its hash). Every commit is anchored on the chain
 * end and chains from it, so nobody can commit such a segment; it is what an append that
 * chained on an edited head leaves behind (its commit refused), and nothing acknowledged it.
 * A segment with a bad byte is not stranded: it stays ErrTamperedLedger.
 */
export const isStrandedOrphan = async (
  records: RecordStore,
  at: { tenant: string; stream: string; head: HeadRecord & { exists: boolean } },
  body: Uint8Array,
): Promise<boolean> => {
  const { tenant, stream, head } = at;
  if (!head.exists) return false;
  try {
    const { header } = decodeSegment(
      body,
      { tenant, stream, firstSeq: head.seq + 1 },
      { verifyOnly: true },
    );
    if (header.prevHash === head.hash) return false;
  } catch (err) {
    if (err instanceof TamperedLedgerError) return false;
    throw err;
  }
  if (head.prunedSeq !== undefined && head.prunedSeq >= head.seq) {
    return head.prunedHash === head.hash;
  }
  const end = await records.get(segmentIndexKey(tenant, stream, head.seq));
  return end !== undefined && toSegmentIndex(end).lastHash === head.hash;
};
