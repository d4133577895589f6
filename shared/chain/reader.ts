import {
  ContentSealedError,
  NotFoundError,
  PrunedError,
  TamperedLedgerError,
} from '../domain/errors.js';
import { genesisHash, type LedgerEvent, type SealedEvent, toLedgerEvent } from '../domain/event.js';
import {
  type DecodeOptions,
  decodeSegment,
  isSegmentV2,
  type Segment,
  type SegmentKeys,
} from '../domain/segment.js';
import type { ChainPoint, VerifyResult } from '../domain/verify.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import { checkHead, headMismatch, LayoutRaceError, readTrustedHead } from './chain-head.js';
import { type HeadRecord, type SegmentIndexRecord, toSegmentIndex } from './layout.js';
import { SEGMENT_INDEX_PREFIX, segmentIndexSk, streamPk } from './storage-keys.js';
import type { StreamKeyring, StreamKeyset } from './stream-keyring.js';

export { LayoutRaceError } from './chain-head.js';

/**
 * Reads and verification. Every committed segment has an index record, written in the same
 * transaction as the head, holding its (firstSeq, prevHash, lastHash): that record is the
 * trusted anchor against which the segment's bytes are verified on their own. Nothing is
 * returned from a segment that fails, nor from any read that touches one (fail closed).
 *
 * The compactor changes the index under running reads: it replaces the records of a run of
 * segments with one record for their merged object (one transaction), prunes records below a
 * stream's pruning point, and deletes superseded objects after a grace period. DynamoDB
 * queries are not isolated from a concurrent transaction, so a read may see half of such a
 * change (a gap, a broken link) or reach an object deleted after the grace. Those are
 * LayoutRaceErrors: the read starts again from the head, a bounded number of times, and only
 * then reports ErrTamperedLedger. Segment bytes are never retried: an object key always holds
 * the same bytes, so a decoding failure is tampering.
 *
 * Every read checks the head it starts from against the chain end (chain-head.ts): a head
 * whose hash was edited or that was deleted fails closed. A stream marked `deleting` answers
 * ErrStreamNotFound; a pruned stream answers ErrPruned for reads before its pruning point
 * and verifies from the hash recorded there.
 */

/** How to decode each segment of a walk (by its index record). */
export type DecodeFor = (entry: SegmentIndexRecord) => DecodeOptions;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface ReaderOptions {
  objects: ObjectStore;
  records: RecordStore;
  /**
   * Opens format 2 segments (docs/privacy.md). Without it, or when the stream's key cannot be
   * unwrapped, they verify whole and their events carry no payload: reading one is
   * ErrUnavailable (ContentSealedError), verifying the chain needs no key.
   */
  keyring?: StreamKeyring;
  /** Segments fetched at once. Default 8. */
  concurrency?: number;
  /** Events a filtered read may scan before answering with `next`. Default 5000. */
  maxScan?: number;
  /** Times a read starts again after meeting a concurrent compaction. Default 5. */
  layoutRetries?: number;
  /** Pause before the n-th new start: n times this, ms. Default 10. */
  retryDelayMs?: number;
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

/** A page of verified events as stored: their payloads are the stored canonical JSON. */
export interface SealedPage {
  events: SealedEvent[];
  next?: number;
}

/** What a caller of verifyChain collects from the verified segments on the way. */
export interface ChainHooks {
  decode?: DecodeFor;
  visit?: (segment: Segment, entry: SegmentIndexRecord) => void;
}

/** A verified chain: the head read first and the chain point it ends at. */
export interface VerifiedChain {
  head: HeadRecord;
  start: ChainPoint;
  end: ChainPoint;
}

export class Reader {
  readonly #o: Required<Omit<ReaderOptions, 'keyring'>> & Pick<ReaderOptions, 'keyring'>;

  constructor(options: ReaderOptions) {
    this.#o = {
      ...options,
      concurrency: options.concurrency ?? 8,
      maxScan: options.maxScan ?? 5000,
      layoutRetries: options.layoutRetries ?? 5,
      retryDelayMs: options.retryDelayMs ?? 10,
    };
  }

  /** The head record (ErrStreamNotFound, or ErrTamperedLedger for a deleted head). */
  head(tenant: string, stream: string): Promise<HeadRecord> {
    return readTrustedHead(this.#o.records, tenant, stream);
  }

  /**
   * The commitment key `k_c` of a stream sealed at rest (docs/privacy.md, Decision 1), for an
   * authorized reader to bind the payloads it is shown to the chain. A stream in the clear has
   * none (ErrNotFound); a server that cannot open the key answers ErrUnavailable; a key record
   * naming another key than the head is ErrTamperedLedger. `k_c` decrypts nothing.
   */
  async commitmentKey(
    tenant: string,
    stream: string,
  ): Promise<{ streamId: string; keyId: string; commitKey: string }> {
    const head = await this.head(tenant, stream);
    const keyset = await this.sealedKeys(tenant, stream, head);
    if (keyset === undefined) {
      throw new NotFoundError(`stream ${stream} is stored in the clear: it has no commitment key`);
    }
    return {
      streamId: stream,
      keyId: keyset.keyId,
      commitKey: Buffer.from(keyset.keys.commit).toString('base64url'),
    };
  }

  /** The head, checked against the chain end (chain-head.ts). */
  async checkedHead(tenant: string, stream: string): Promise<HeadRecord> {
    return this.checkHead(tenant, stream, await this.head(tenant, stream));
  }

  /** Checks a head read before against the chain end; answers the head it checked. */
  checkHead(tenant: string, stream: string, head: HeadRecord): Promise<HeadRecord> {
    return checkHead(this.#o.records, tenant, stream, head, this.#o.layoutRetries + 1);
  }

  /** Runs a whole read again when it met a concurrent compaction. */
  async retrying<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (!(err instanceof LayoutRaceError) || attempt >= this.#o.layoutRetries) throw err;
        await sleep(this.#o.retryDelayMs * (attempt + 1));
      }
    }
  }

  /** Index records of the segments holding seqs >= from, in order. */
  async *#index(tenant: string, stream: string, from: number): AsyncGenerator<SegmentIndexRecord> {
    let after: string | undefined = segmentIndexSk(from - 1);
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

  /**
   * The keys of a stream whose head names one (sealed at rest), checked against its key
   * record; undefined for a head in the clear. A server that cannot open the key is
   * ErrUnavailable (ContentSealedError); a record naming another key is ErrTamperedLedger.
   */
  async sealedKeys(
    tenant: string,
    stream: string,
    head: { seq: number; keyId?: string },
  ): Promise<StreamKeyset | undefined> {
    if (head.keyId === undefined) return undefined;
    if (!this.#o.keyring) throw new ContentSealedError(`the key of stream ${stream}`);
    const keyset = await this.#o.keyring.forRead(tenant, stream);
    if (keyset?.keyId !== head.keyId) {
      throw new TamperedLedgerError(
        Math.max(1, head.seq),
        `the head is sealed under key ${head.keyId}, the stream has ${keyset ? `key ${keyset.keyId}` : 'no key record'}`,
      );
    }
    return keyset;
  }

  /** A format 2 segment's keys, when its payloads are wanted and the keyring opens them. */
  async #keysOf(
    tenant: string,
    stream: string,
    body: Uint8Array,
    decode: DecodeOptions,
  ): Promise<SegmentKeys | undefined> {
    if (decode.verifyOnly || !isSegmentV2(body) || !this.#o.keyring) return undefined;
    try {
      return (await this.#o.keyring.forRead(tenant, stream))?.segment;
    } catch (err) {
      if (err instanceof ContentSealedError) return undefined; // headers only
      throw err;
    }
  }

  /** Fetches and verifies one segment against its trusted index record. */
  async #segment(
    tenant: string,
    stream: string,
    entry: SegmentIndexRecord,
    decode: DecodeOptions,
  ): Promise<Segment> {
    const stored = await this.#o.objects.get(entry.objectKey);
    if (!stored) {
      throw new LayoutRaceError(entry.firstSeq, `segment ${entry.objectKey} is missing`);
    }
    const keys = await this.#keysOf(tenant, stream, stored.body, decode);
    const segment = decodeSegment(
      stored.body,
      { tenant, stream, firstSeq: entry.firstSeq, prevHash: entry.prevHash },
      keys ? { ...decode, keys } : decode,
    );
    if (segment.header.lastSeq !== entry.lastSeq || segment.header.lastHash !== entry.lastHash) {
      throw new TamperedLedgerError(entry.firstSeq, 'segment does not end where the index says');
    }
    return segment;
  }

  /**
   * Walks the committed segments from `from` in order, verifying each and its link to the
   * one before, `concurrency` fetches at a time; `decode` says what to decode of each (all
   * of it is verified either way). `visit` returns false to stop. `until`: the last seq the
   * visitor can need; segments after it are not fetched ahead.
   */
  async walk(
    tenant: string,
    stream: string,
    from: number,
    start: ChainPoint | undefined,
    decode: DecodeFor,
    visit: (segment: Segment, entry: SegmentIndexRecord) => boolean,
    until?: number,
  ): Promise<ChainPoint | undefined> {
    let prev = start;
    let batch: SegmentIndexRecord[] = [];
    const flush = async (): Promise<boolean> => {
      // Fetch ahead in parallel, but judge segments in order: a bad segment past the point
      // where the visitor stops must not fail a read that never needed it.
      const pending = batch.map((e) => this.#segment(tenant, stream, e, decode(e)));
      for (const p of pending) p.catch(() => undefined);
      for (const [i, fetched] of pending.entries()) {
        const entry = batch[i] as SegmentIndexRecord;
        const expected = prev ? prev.seq + 1 : from;
        if (
          prev ? entry.firstSeq !== expected || entry.prevHash !== prev.hash : entry.firstSeq > from
        ) {
          throw new LayoutRaceError(expected, 'segment index has a gap or a broken link');
        }
        const segment = await fetched;
        prev = { seq: entry.lastSeq, hash: entry.lastHash };
        if (!visit(segment, entry)) return false;
      }
      batch = [];
      return true;
    };
    for await (const entry of this.#index(tenant, stream, from)) {
      if (until !== undefined && entry.firstSeq > until) break;
      batch.push(entry);
      if (batch.length >= this.#o.concurrency && !(await flush())) return prev;
    }
    await flush();
    return prev;
  }

  /**
   * Verified events from `from` (default: the first one kept) on. ErrPruned when `from` lies
   * at or before the stream's pruning point.
   */
  async readEvents(tenant: string, stream: string, options: ReadOptions = {}): Promise<ReadPage> {
    const page = await this.readSealed(tenant, stream, options);
    return { ...page, events: page.events.map(toLedgerEvent) };
  }

  /** Like readEvents, with the events as stored (the API answers their bytes as they are). */
  async readSealed(tenant: string, stream: string, options: ReadOptions = {}): Promise<SealedPage> {
    return this.retrying(() => this.#readSealed(tenant, stream, options));
  }

  async #readSealed(tenant: string, stream: string, options: ReadOptions): Promise<SealedPage> {
    const head = await this.head(tenant, stream);
    // Checked alongside the walk (one more get, no extra round trip), judged before answering.
    const anchored = this.checkHead(tenant, stream, head);
    anchored.catch(() => undefined);
    const floor = head.prunedSeq ?? 0;
    if (floor > 0 && options.from !== undefined && options.from <= floor) {
      throw new PrunedError(stream, floor);
    }
    const from = Math.max(1, floor + 1, options.from ?? 1);
    const limit = options.limit ?? 100;
    if (from > head.seq) {
      await anchored;
      return { events: [] };
    }
    const events: SealedEvent[] = [];
    let scanned = from - 1;
    // The events this page can return at most: only those are decoded (all are verified).
    const span = options.type === undefined ? limit : this.#o.maxScan;
    const only = { from, to: from + span - 1 };
    const visit = (segment: Segment) => {
      for (const sealed of segment.events) {
        if (sealed.seq < from || sealed.seq > head.seq) continue;
        if (events.length >= limit || sealed.seq - from >= this.#o.maxScan) return false;
        scanned = sealed.seq;
        if (options.type === undefined || sealed.type === options.type) events.push(sealed);
      }
      return scanned < head.seq && events.length < limit && scanned - from + 1 < this.#o.maxScan;
    };
    await this.walk(tenant, stream, from, undefined, () => ({ only }), visit, only.to);
    if (scanned < from)
      throw new LayoutRaceError(from, 'committed events are missing from the index');
    await anchored;
    return scanned < head.seq ? { events, next: scanned + 1 } : { events };
  }

  /**
   * Verified events [from, to] (to <= the head), which may start below the pruning point:
   * retention keeps the segments from the one holding the last state-setting event at or
   * before the pruning point (state-binding.ts), verified and linked like any others, up into
   * the kept chain. A segment of the span that is gone is ErrTamperedLedger.
   */
  async readSpan(tenant: string, stream: string, from: number, to: number): Promise<LedgerEvent[]> {
    if (to < from) return [];
    return this.retrying(async () => {
      const events: LedgerEvent[] = [];
      const only = { from, to };
      await this.walk(
        tenant,
        stream,
        from,
        undefined,
        () => ({ only }),
        (segment, entry) => {
          for (const e of segment.events)
            if (e.seq >= from && e.seq <= to) events.push(toLedgerEvent(e));
          return entry.lastSeq < to;
        },
        to,
      );
      if (events[0]?.seq !== from || events.at(-1)?.seq !== to) {
        throw new LayoutRaceError(from, `the segments holding seqs ${from}..${to} are missing`);
      }
      return events;
    });
  }

  /**
   * Verifies the whole chain, from genesis (or from the hash recorded at its pruning point)
   * to the head read first. Segments committed after that read are not judged. Base
   * snapshots and fork origins are verified too by the Verifier (verifier.ts).
   */
  async verify(tenant: string, stream: string): Promise<VerifyResult> {
    try {
      const { end } = await this.verifyChain(tenant, stream);
      return { ok: true, ...end };
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

  /**
   * The chain walk of verify (throws ErrTamperedLedger): `decode` and `visit` let a caller
   * collect what it needs of the verified segments on the way.
   */
  async verifyChain(
    tenant: string,
    stream: string,
    hooks: ChainHooks = {},
  ): Promise<VerifiedChain> {
    return this.retrying(() => this.#verifyChain(tenant, stream, hooks));
  }

  async #verifyChain(tenant: string, stream: string, hooks: ChainHooks): Promise<VerifiedChain> {
    const head = await this.head(tenant, stream);
    const start: ChainPoint =
      head.prunedSeq !== undefined && head.prunedHash !== undefined
        ? { seq: head.prunedSeq, hash: head.prunedHash }
        : { seq: 0, hash: genesisHash(tenant, stream) };
    const decode = hooks.decode ?? (() => ({ verifyOnly: true }));
    let last: SegmentIndexRecord | undefined;
    if (head.seq > start.seq) {
      await this.walk(tenant, stream, start.seq + 1, start, decode, (segment, entry) => {
        hooks.visit?.(segment, entry);
        last = entry;
        return entry.lastSeq < head.seq;
      });
    }
    const end = last ? await this.#pointAt(tenant, stream, last, head.seq) : start;
    if (end.seq < head.seq) throw new LayoutRaceError(end.seq + 1, 'chain ends before the head');
    if (end.hash !== head.hash) throw headMismatch(head, 'chain does not reach the head');
    return { head, start, end };
  }

  /**
   * The chain point at `seq` inside a verified segment (a merged segment may end after the
   * head that was read before it).
   */
  async #pointAt(
    tenant: string,
    stream: string,
    entry: SegmentIndexRecord,
    seq: number,
  ): Promise<ChainPoint> {
    if (entry.lastSeq <= seq) return { seq: entry.lastSeq, hash: entry.lastHash };
    const segment = await this.#segment(tenant, stream, entry, {});
    const event = segment.events.find((e) => e.seq === seq);
    if (!event) throw new TamperedLedgerError(seq, 'segment does not hold the head seq');
    return { seq, hash: event.hash };
  }
}
