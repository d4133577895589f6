import { canonicalJson } from './canonical.js';
import { InvalidFormatError, InvalidInputError, TamperedLedgerError } from './errors.js';
import {
  parsePreimage,
  preimageLayout,
  preimagePrevHash,
  preimageSeq,
  type SealedEvent,
} from './event.js';
import { HASH_BYTES, isHexHash, sha256 } from './hashing.js';
import { sealKeyVersion } from './privacy/content-seal.js';
import { bodyPlace, encodeBody, openBody, type SegmentKeys } from './segment-body.js';

export type { SegmentKeys };

/**
 * Segment codec (format v1, see docs/ledger-format.md). A segment is one immutable object
 * holding one appended batch of consecutive events:
 *
 *   8 bytes  magic "HEFSEG\0" + u8 format version (= 1)
 *   u32      len(header), then the header as RFC 8785 canonical JSON
 *   32 bytes SHA-256 of the header bytes (the header seal)
 *   n times: u32 len(preimage), the event preimage, 32 bytes SHA-256 of it
 *
 * Decoding checks everything (magic, header fields, every record's bounds, seq continuity,
 * hash linkage from the header's prevHash, every hash, the header's lastSeq/lastHash, no
 * trailing bytes) and fails closed with TamperedLedgerError naming the first bad seq.
 *
 * Event bytes are covered by the hash chain, whose last hash the chain head (a record in
 * the RecordStore) holds. The header seal covers the header's own fields (epoch,
 * idempotency key, createdAt), so that any flipped byte of a segment is detected; it is a
 * checksum, not a signature: someone able to rewrite the object can recompute it, but can
 * change no event without breaking the chain.
 *
 * Format 2 (docs/ledger-format.md, Segment format 2) holds format 2 event headers as its
 * records and, after them, `lp(body)`: the payloads sealed together (segment-body.ts). The
 * chain checks above run on the records alone, so a reader without keys verifies it whole;
 * with keys it also opens the body and checks each payload against its commitment.
 */

export const SEGMENT_FORMAT_VERSION = 1;
export const SEGMENT_FORMAT_V2 = 2;
const MAGIC = Buffer.from('HEFSEG\0\x01', 'latin1');
const MAGIC_V2 = Buffer.from('HEFSEG\0\x02', 'latin1');

export interface SegmentHeader {
  format: number;
  tenant: string;
  stream: string;
  firstSeq: number;
  lastSeq: number;
  /** Hash of the event before firstSeq (the genesis hash for seq 1). */
  prevHash: string;
  lastHash: string;
  /** Fencing epoch of the writer. */
  epoch: number;
  /** Idempotency key of the request that appended this batch, or null. */
  idempotencyKey: string | null;
  /** SHA-256 fingerprint of that request (method, path, body), or null. */
  requestDigest: string | null;
  /** Milliseconds since the epoch, from the writer's clock. */
  createdAt: number;
  /** Format 2 only: the id of the stream key the body is sealed under. */
  keyId?: string;
}

export interface Segment {
  header: SegmentHeader;
  events: SealedEvent[];
}

/** What the reader knows before opening a segment (from its key and the chain so far). */
export interface SegmentExpectation {
  tenant: string;
  stream: string;
  firstSeq: number;
  /** When known: the hash the segment must chain from. */
  prevHash?: string;
}

export interface SegmentMeta {
  tenant: string;
  stream: string;
  epoch: number;
  idempotencyKey: string | null;
  requestDigest: string | null;
  createdAt: number;
}

/**
 * Encodes a segment: format 1 for format 1 events, format 2 (with `keys`, which seal the
 * payloads) for format 2 events. A segment never mixes event formats.
 */
export const encodeSegment = (
  meta: SegmentMeta,
  events: SealedEvent[],
  keys?: SegmentKeys,
  nonce?: Uint8Array,
): Uint8Array => {
  const first = events[0];
  const last = events.at(-1);
  if (!first || !last) throw new InvalidInputError('a segment holds at least one event');
  const format = first.preimage[0] === 2 ? SEGMENT_FORMAT_V2 : SEGMENT_FORMAT_VERSION;
  if (events.some((e) => (e.preimage[0] === 2) !== (format === SEGMENT_FORMAT_V2))) {
    throw new InvalidInputError('a segment holds events of one format');
  }
  if (format === SEGMENT_FORMAT_V2 && keys === undefined) {
    throw new InvalidInputError('a format 2 segment needs its stream keys');
  }
  const header: SegmentHeader = {
    format,
    tenant: meta.tenant,
    stream: meta.stream,
    firstSeq: first.seq,
    lastSeq: last.seq,
    prevHash: first.prevHash,
    lastHash: last.hash,
    epoch: meta.epoch,
    idempotencyKey: meta.idempotencyKey,
    requestDigest: meta.requestDigest,
    createdAt: meta.createdAt,
    ...(format === SEGMENT_FORMAT_V2 && keys && { keyId: keys.keyId }),
  };
  const headerBytes = Buffer.from(canonicalJson(header), 'utf8');
  const body =
    format === SEGMENT_FORMAT_V2 && keys
      ? encodeBody(
          keys,
          bodyPlace(meta.tenant, meta.stream, first.seq, last.seq),
          events,
          nonce ? { nonce } : {},
        )
      : undefined;
  let size = MAGIC.length + 4 + headerBytes.length + HASH_BYTES;
  for (const e of events) size += 4 + e.preimage.length + HASH_BYTES;
  if (body) size += 4 + body.length;
  const buf = Buffer.allocUnsafe(size);
  (body ? MAGIC_V2 : MAGIC).copy(buf, 0);
  let at = MAGIC.length;
  buf.writeUInt32BE(headerBytes.length, at);
  headerBytes.copy(buf, at + 4);
  at += 4 + headerBytes.length;
  sha256(headerBytes).copy(buf, at);
  at += HASH_BYTES;
  for (const e of events) {
    buf.writeUInt32BE(e.preimage.length, at);
    buf.set(e.preimage, at + 4);
    at += 4 + e.preimage.length;
    buf.write(e.hash, at, HASH_BYTES, 'hex');
    at += HASH_BYTES;
  }
  if (body) {
    buf.writeUInt32BE(body.length, at);
    body.copy(buf, at + 4);
  }
  return buf;
};

const isUint = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

const checkHeader = (raw: unknown, expect: SegmentExpectation, format: number): SegmentHeader => {
  const h = raw as Partial<SegmentHeader> | null;
  const fail = (why: string): never => {
    throw new TamperedLedgerError(expect.firstSeq, `segment header ${why}`);
  };
  if (typeof h !== 'object' || h === null || Array.isArray(h)) return fail('is not an object');
  const keys = Object.keys(h).sort().join(',');
  const fields =
    format === SEGMENT_FORMAT_V2
      ? 'createdAt,epoch,firstSeq,format,idempotencyKey,keyId,lastHash,lastSeq,prevHash,requestDigest,stream,tenant'
      : 'createdAt,epoch,firstSeq,format,idempotencyKey,lastHash,lastSeq,prevHash,requestDigest,stream,tenant';
  if (keys !== fields) return fail('has unexpected fields');
  if (format === SEGMENT_FORMAT_V2 && (typeof h.keyId !== 'string' || h.keyId.length === 0)) {
    return fail('has a bad keyId');
  }
  if (h.format !== format) return fail(`has format ${String(h.format)} in a v${format} segment`);
  if (h.tenant !== expect.tenant || h.stream !== expect.stream) return fail('names another stream');
  if (h.firstSeq !== expect.firstSeq) return fail('starts at another seq');
  if (!isUint(h.lastSeq) || h.lastSeq < h.firstSeq) return fail('has a bad lastSeq');
  if (!isHexHash(h.prevHash) || !isHexHash(h.lastHash)) return fail('has a bad hash');
  if (expect.prevHash !== undefined && h.prevHash !== expect.prevHash) {
    return fail('does not chain from the previous event');
  }
  if (!isUint(h.epoch) || !isUint(h.createdAt)) return fail('has a bad epoch or createdAt');
  if (h.idempotencyKey !== null && typeof h.idempotencyKey !== 'string') {
    return fail('has a bad idempotencyKey');
  }
  if (h.requestDigest !== null && !isHexHash(h.requestDigest))
    return fail('has a bad requestDigest');
  return h as SegmentHeader;
};

/** Decodes and fully verifies a segment; throws TamperedLedgerError on any mismatch. */
export interface DecodeOptions {
  /** Check integrity only; the returned segment holds no events. */
  verifyOnly?: boolean;
  /**
   * Verify everything, but return only the events with from <= seq <= to (a page read from a
   * large merged segment need not decode the events it does not return).
   */
  only?: { from: number; to: number };
  /**
   * The stream's keys, to open a format 2 segment's body and bind its payloads. Without them
   * a format 2 segment verifies whole and its events carry no payload (headers only).
   */
  keys?: SegmentKeys;
}

export const decodeSegment = (
  bytes: Uint8Array,
  expect: SegmentExpectation,
  options: DecodeOptions = {},
): Segment => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fail = (seq: number, why: string, cause?: unknown): never => {
    throw new TamperedLedgerError(seq, why, cause === undefined ? undefined : { cause });
  };
  if (buf.length < MAGIC.length + 4) return fail(expect.firstSeq, 'not a segment');
  const magic = buf.subarray(0, MAGIC.length);
  const format = magic.equals(MAGIC) ? 1 : magic.equals(MAGIC_V2) ? 2 : 0;
  if (format === 0) return fail(expect.firstSeq, 'not a v1 or v2 segment');
  const headerLength = buf.readUInt32BE(MAGIC.length);
  const headerEnd = MAGIC.length + 4 + headerLength;
  if (headerEnd + HASH_BYTES > buf.length) return fail(expect.firstSeq, 'header overruns segment');
  const headerBytes = buf.subarray(MAGIC.length + 4, headerEnd);
  if (!sha256(headerBytes).equals(buf.subarray(headerEnd, headerEnd + HASH_BYTES))) {
    return fail(expect.firstSeq, 'header seal does not match');
  }
  let raw: unknown;
  try {
    raw = JSON.parse(headerBytes.toString('utf8'));
  } catch (err) {
    return fail(expect.firstSeq, 'header is not JSON', err);
  }
  const header = checkHeader(raw, expect, format);
  const eventFormat = format === SEGMENT_FORMAT_V2 ? 2 : 1;
  // A format 2 body is opened only with keys, and then every event is parsed (the body
  // walks them all); the page filter applies after.
  const opening = format === SEGMENT_FORMAT_V2 && !options.verifyOnly && options.keys !== undefined;

  // Integrity first, on raw bytes (no hex or UTF-8 decoding): layout, seq, linkage, hash.
  const events: SealedEvent[] = [];
  let at = headerEnd + HASH_BYTES;
  let prev: Buffer = Buffer.from(header.prevHash, 'hex');
  for (let seq = header.firstSeq; seq <= header.lastSeq; seq++) {
    if (at + 4 > buf.length) return fail(seq, 'segment ends before its lastSeq');
    const length = buf.readUInt32BE(at);
    const end = at + 4 + length + HASH_BYTES;
    if (end > buf.length) return fail(seq, 'event record overruns segment');
    const preimage = buf.subarray(at + 4, at + 4 + length);
    const stored = buf.subarray(at + 4 + length, end);
    const layout = preimageLayout(preimage);
    if (typeof layout === 'string') return fail(seq, layout);
    if (preimage[0] !== eventFormat)
      return fail(seq, `format ${preimage[0]} event in a v${format} segment`);
    if (preimageSeq(preimage) !== seq)
      return fail(seq, `record holds seq ${preimageSeq(preimage)}`);
    if (!preimagePrevHash(preimage).equals(prev)) {
      return fail(seq, 'prevHash does not link to the previous event');
    }
    if (!sha256(preimage).equals(stored)) return fail(seq, 'hash does not match bytes');
    const wanted = !options.only || (seq >= options.only.from && seq <= options.only.to);
    if (!options.verifyOnly && (wanted || opening)) {
      try {
        events.push(parsePreimage(preimage, stored.toString('hex')));
      } catch (err) {
        if (err instanceof InvalidFormatError) return fail(seq, err.message, err);
        throw err;
      }
    }
    prev = stored;
    at = end;
  }
  if (format === SEGMENT_FORMAT_V2) {
    if (at + 4 > buf.length) return fail(header.firstSeq, 'segment ends before its body');
    const bodyEnd = at + 4 + buf.readUInt32BE(at);
    if (bodyEnd > buf.length) return fail(header.firstSeq, 'body overruns segment');
    const body = buf.subarray(at + 4, bodyEnd);
    at = bodyEnd;
    if (opening && options.keys) {
      if (options.keys.keyId !== header.keyId) {
        return fail(header.firstSeq, `body is sealed under key ${header.keyId}, not the one given`);
      }
      const place = bodyPlace(header.tenant, header.stream, header.firstSeq, header.lastSeq);
      try {
        openBody(options.keys, place, body, events, sealKeyVersion(body));
      } catch (err) {
        if (err instanceof InvalidFormatError) return fail(header.firstSeq, err.message, err);
        throw err;
      }
    }
  }
  if (at !== buf.length) return fail(header.lastSeq, 'trailing bytes after the last event');
  if (prev.toString('hex') !== header.lastHash) {
    return fail(header.lastSeq, 'lastHash does not match the events');
  }
  const only = options.only;
  if (opening && only) {
    return { header, events: events.filter((e) => e.seq >= only.from && e.seq <= only.to) };
  }
  return { header, events };
};

/** Whether encoded bytes are a format 2 segment (by magic; decoding checks the rest). */
export const isSegmentV2 = (bytes: Uint8Array): boolean =>
  bytes.length >= MAGIC_V2.length &&
  Buffer.from(bytes.buffer, bytes.byteOffset, MAGIC_V2.length).equals(MAGIC_V2);

/** Where the event records of an encoded segment start (after magic, header and seal). */
const recordsOffset = (bytes: Uint8Array): number => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return MAGIC.length + 4 + buf.readUInt32BE(MAGIC.length) + HASH_BYTES;
};

/**
 * Merges consecutive segments into one v1 segment, copying every event record byte for byte
 * (no event or hash changes). Each part must already have been verified (decodeSegment) and
 * the parts must chain: each starts at the seq after the previous one's last and links to its
 * lastHash. The merged header covers firstSeq..lastSeq with the first part's prevHash and the
 * last part's lastHash; it names no request (idempotency key and digest null), and takes the
 * last part's epoch and the latest createdAt, so two compactors merging the same run write
 * the same bytes.
 */
export const mergeSegments = (parts: Array<{ bytes: Uint8Array; header: SegmentHeader }>) => {
  const first = parts[0];
  const last = parts.at(-1);
  if (!first || !last || parts.length < 2) {
    throw new InvalidInputError('a merge needs at least two segments');
  }
  if (parts.some((p) => p.header.format !== SEGMENT_FORMAT_VERSION)) {
    throw new InvalidInputError('format 2 segments are merged by mergeSegmentsV2');
  }
  let createdAt = 0;
  for (const [i, part] of parts.entries()) {
    const before = parts[i - 1]?.header;
    const h = part.header;
    if (before && (h.firstSeq !== before.lastSeq + 1 || h.prevHash !== before.lastHash)) {
      throw new InvalidInputError(`segments to merge do not chain at seq ${h.firstSeq}`);
    }
    if (h.tenant !== first.header.tenant || h.stream !== first.header.stream) {
      throw new InvalidInputError('segments to merge belong to different streams');
    }
    createdAt = Math.max(createdAt, h.createdAt);
  }
  const header: SegmentHeader = {
    format: SEGMENT_FORMAT_VERSION,
    tenant: first.header.tenant,
    stream: first.header.stream,
    firstSeq: first.header.firstSeq,
    lastSeq: last.header.lastSeq,
    prevHash: first.header.prevHash,
    lastHash: last.header.lastHash,
    epoch: last.header.epoch,
    idempotencyKey: null,
    requestDigest: null,
    createdAt,
  };
  const headerBytes = Buffer.from(canonicalJson(header), 'utf8');
  const records = parts.map((p) => p.bytes.subarray(recordsOffset(p.bytes)));
  let size = MAGIC.length + 4 + headerBytes.length + HASH_BYTES;
  for (const r of records) size += r.length;
  const buf = Buffer.allocUnsafe(size);
  MAGIC.copy(buf, 0);
  buf.writeUInt32BE(headerBytes.length, MAGIC.length);
  headerBytes.copy(buf, MAGIC.length + 4);
  let at = MAGIC.length + 4 + headerBytes.length;
  sha256(headerBytes).copy(buf, at);
  at += HASH_BYTES;
  for (const r of records) {
    buf.set(r, at);
    at += r.length;
  }
  return { header, bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) };
};
