import { StreamNotFoundError, TamperedLedgerError } from '../domain/errors.js';
import { genesisHash, type LedgerEvent, toLedgerEvent } from '../domain/event.js';
import { decodeSegment, type Segment } from '../domain/segment.js';
import type { ChainPoint, VerifyResult } from '../domain/verify.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import {
  type HeadRecord,
  headKey,
  pad16,
  SEGMENT_INDEX_PREFIX,
  type SegmentIndexRecord,
  streamPk,
  toHead,
  toSegmentIndex,
} from './layout.js';

/**
 * Reads and verification. Every committed segment has an index record, written in the same
 * transaction as the head, holding its (firstSeq, prevHash, lastHash): that record is the
 * trusted anchor against which the segment's bytes are verified on their own. Nothing is
 * returned from a segment that fails, nor from any read that touches one (fail closed).
 */

export interface ReaderOptions {
  objects: ObjectStore;
  records: RecordStore;
  /** Segments fetched at once. Default 8. */
  concurrency?: number;
  /** Events a filtered read may scan before answering with `next`. Default 5000. */
  maxScan?: number;
}

export interface ReadOptions {
  from?: number;
  limit?: number;
  type?: string;
}

export interface ReadPage {
  events: LedgerEvent[];
  /** The seq to read from next; absent when the read reached the head. */
  next?: number;
}

export class Reader {
  readonly #o: Required<ReaderOptions>;

  constructor(options: ReaderOptions) {
    this.#o = {
      ...options,
      concurrency: options.concurrency ?? 8,
      maxScan: options.maxScan ?? 5000,
    };
  }

  async head(tenant: string, stream: string): Promise<HeadRecord> {
    const item = await this.#o.records.get(headKey(tenant, stream));
    if (!item) throw new StreamNotFoundError(stream);
    return toHead(item);
  }

  /** Index records of the segments holding seqs >= from, in order. */
  async *#index(tenant: string, stream: string, from: number): AsyncGenerator<SegmentIndexRecord> {
    let after: string | undefined = `${SEGMENT_INDEX_PREFIX}${pad16(from - 1)}`;
    do {
      const page = await this.#o.records.query(streamPk(tenant, stream), {
        skPrefix: SEGMENT_INDEX_PREFIX,
        after,
        limit: 100,
      });
      for (const item of page.items) yield toSegmentIndex(item);
      after = page.next;
    } while (after !== undefined);
  }

  /** Fetches and verifies one segment against its trusted index record. */
  async #segment(
    tenant: string,
    stream: string,
    entry: SegmentIndexRecord,
    verifyOnly: boolean,
  ): Promise<Segment> {
    const stored = await this.#o.objects.get(entry.objectKey);
    if (!stored)
      throw new TamperedLedgerError(entry.firstSeq, `segment ${entry.objectKey} is missing`);
    const segment = decodeSegment(
      stored.body,
      { tenant, stream, firstSeq: entry.firstSeq, prevHash: entry.prevHash },
      { verifyOnly },
    );
    if (segment.header.lastSeq !== entry.lastSeq || segment.header.lastHash !== entry.lastHash) {
      throw new TamperedLedgerError(entry.firstSeq, 'segment does not end where the index says');
    }
    return segment;
  }

  /**
   * Walks the committed segments from `from` in order, verifying each and its link to the
   * one before, `concurrency` fetches at a time. `visit` returns false to stop.
   */
  async #walk(
    tenant: string,
    stream: string,
    from: number,
    start: ChainPoint | undefined,
    verifyOnly: boolean,
    visit: (segment: Segment, entry: SegmentIndexRecord) => boolean,
  ): Promise<ChainPoint | undefined> {
    let prev = start;
    let batch: SegmentIndexRecord[] = [];
    const flush = async (): Promise<boolean> => {
      // Fetch ahead in parallel, but judge segments in order: a bad segment past the point
      // where the visitor stops must not fail a read that never needed it.
      const pending = batch.map((e) => this.#segment(tenant, stream, e, verifyOnly));
      for (const p of pending) p.catch(() => undefined);
      for (const [i, fetched] of pending.entries()) {
        const entry = batch[i] as SegmentIndexRecord;
        const expected = prev ? prev.seq + 1 : from;
        if (
          prev ? entry.firstSeq !== expected || entry.prevHash !== prev.hash : entry.firstSeq > from
        ) {
          throw new TamperedLedgerError(expected, 'segment index has a gap or a broken link');
        }
        const segment = await fetched;
        prev = { seq: entry.lastSeq, hash: entry.lastHash };
        if (!visit(segment, entry)) return false;
      }
      batch = [];
      return true;
    };
    for await (const entry of this.#index(tenant, stream, from)) {
      batch.push(entry);
      if (batch.length >= this.#o.concurrency && !(await flush())) return prev;
    }
    await flush();
    return prev;
  }

  async readEvents(tenant: string, stream: string, options: ReadOptions = {}): Promise<ReadPage> {
    const head = await this.head(tenant, stream);
    const from = Math.max(1, options.from ?? 1);
    const limit = options.limit ?? 100;
    if (from > head.seq) return { events: [] };
    const events: LedgerEvent[] = [];
    let scanned = from - 1;
    await this.#walk(tenant, stream, from, undefined, false, (segment) => {
      for (const sealed of segment.events) {
        if (sealed.seq < from || sealed.seq > head.seq) continue;
        if (events.length >= limit || sealed.seq - from >= this.#o.maxScan) return false;
        scanned = sealed.seq;
        if (options.type === undefined || sealed.type === options.type)
          events.push(toLedgerEvent(sealed));
      }
      return scanned < head.seq && events.length < limit && scanned - from + 1 < this.#o.maxScan;
    });
    if (scanned < from)
      throw new TamperedLedgerError(from, 'committed events are missing from the index');
    return scanned < head.seq ? { events, next: scanned + 1 } : { events };
  }

  /** Verifies the whole stream from genesis to the head. */
  async verify(tenant: string, stream: string): Promise<VerifyResult> {
    const head = await this.head(tenant, stream);
    try {
      const genesis = { seq: 0, hash: genesisHash(tenant, stream) };
      const end = (await this.#walk(tenant, stream, 1, genesis, true, () => true)) ?? genesis;
      if (end.seq !== head.seq || end.hash !== head.hash) {
        throw new TamperedLedgerError(
          Math.min(end.seq, head.seq) + 1,
          'chain does not reach the head',
        );
      }
      return { ok: true, seq: head.seq, hash: head.hash };
    } catch (err) {
      if (!(err instanceof TamperedLedgerError)) throw err;
      return {
        ok: false,
        code: 'ErrTamperedLedger',
        firstBadSeq: err.firstBadSeq,
        reason: err.message,
      };
    }
  }
}
