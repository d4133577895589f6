import { TamperedLedgerError } from './errors.js';
import { hashLedgerEvent, type LedgerEvent } from './event.js';
import { type DecodeOptions, decodeSegment, type Segment } from './segment.js';

/** A point on a chain: the seq of an event and its hash (seq 0 = the genesis hash). */
export interface ChainPoint {
  seq: number;
  hash: string;
}

export type VerifyResult =
  | { ok: true; seq: number; hash: string }
  | { ok: false; code: 'ErrTamperedLedger'; firstBadSeq: number; reason: string };

const bad = (err: TamperedLedgerError): VerifyResult => ({
  ok: false,
  code: 'ErrTamperedLedger',
  firstBadSeq: err.firstBadSeq,
  reason: err.message,
});

export interface VerifyEventsOptions {
  /**
   * k_c of the stream incarnation (GET …/keys/commitment): binds each format 2 event's
   * payload to its header. Without it a format 2 event is refused, unless `headersOnly`.
   */
  commitKey?: Uint8Array;
  /** Check the headers' chain only (an auditor holding no key): payloads are not bound. */
  headersOnly?: boolean;
}

/**
 * Verifies public events (as the API returns them) that continue the chain at `from`:
 * consecutive seqs, each prevHash the previous hash, each hash recomputed from the fields.
 * Clients use this to trust neither the server nor the bucket.
 */
export const verifyEvents = (
  events: LedgerEvent[],
  from: ChainPoint,
  options: VerifyEventsOptions = {},
): VerifyResult => {
  let prev = from;
  for (const event of events) {
    const seq = prev.seq + 1;
    if (event.seq !== seq) {
      return bad(new TamperedLedgerError(seq, `expected seq ${seq}, got ${event.seq}`));
    }
    if (event.prevHash !== prev.hash) {
      return bad(new TamperedLedgerError(seq, 'prevHash does not link to the previous event'));
    }
    if (event.format !== undefined && options.commitKey === undefined && !options.headersOnly) {
      return bad(
        new TamperedLedgerError(
          seq,
          'a format 2 event needs the commitment key to bind its payload',
        ),
      );
    }
    let hash: string;
    try {
      hash = hashLedgerEvent(event, options.headersOnly ? undefined : options.commitKey);
      if (
        event.format !== undefined &&
        !options.headersOnly &&
        event.commitment !== undefined &&
        hashLedgerEvent(event) !== hash
      ) {
        return bad(new TamperedLedgerError(seq, 'payload does not match its commitment'));
      }
    } catch {
      return bad(new TamperedLedgerError(seq, 'event fields cannot be encoded'));
    }
    if (hash !== event.hash) return bad(new TamperedLedgerError(seq, 'hash does not match'));
    prev = { seq, hash };
  }
  return { ok: true, ...prev };
};

/**
 * Decodes and verifies consecutive segments of one stream continuing the chain at `from`.
 * Returns the decoded segments, or throws TamperedLedgerError with the first bad seq.
 */
export const decodeChain = (
  tenant: string,
  stream: string,
  from: ChainPoint,
  bodies: Iterable<Uint8Array>,
  options: DecodeOptions = {},
): Segment[] => {
  const segments: Segment[] = [];
  let prev = from;
  for (const body of bodies) {
    const segment = decodeSegment(
      body,
      {
        tenant,
        stream,
        firstSeq: prev.seq + 1,
        prevHash: prev.hash,
      },
      options,
    );
    segments.push(segment);
    prev = { seq: segment.header.lastSeq, hash: segment.header.lastHash };
  }
  return segments;
};

/** Like decodeChain, answering with a VerifyResult instead of throwing. */
export const verifySegments = (
  tenant: string,
  stream: string,
  from: ChainPoint,
  bodies: Iterable<Uint8Array>,
): VerifyResult => {
  try {
    const segments = decodeChain(tenant, stream, from, bodies, { verifyOnly: true });
    const last = segments.at(-1)?.header;
    return { ok: true, seq: last?.lastSeq ?? from.seq, hash: last?.lastHash ?? from.hash };
  } catch (err) {
    if (err instanceof TamperedLedgerError) return bad(err);
    throw err;
  }
};
