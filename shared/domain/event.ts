import { canonicalJson, type JsonValue } from './canonical.js';
import { ContentSealedError, InvalidFormatError, InvalidInputError } from './errors.js';
import { HASH_BYTES, isHexHash, sha256 } from './hashing.js';
import { COMMITMENT_BYTES, commitmentMatches, payloadCommitment } from './privacy/commitment.js';

/**
 * Ledger events and their hash (format v1, written down in docs/ledger-format.md).
 *
 * The hash of an event is SHA-256 over its *preimage*, a length-prefixed binary record:
 *
 *   u8  version (= 1)
 *   u64 seq            big-endian
 *   u64 ts             big-endian, milliseconds since the epoch
 *   32  prevHash       raw bytes
 *   u32 len(type)      big-endian, then the UTF-8 bytes of type
 *   u32 len(payload)   big-endian, then the RFC 8785 canonical JSON of payload (UTF-8)
 *
 * Every variable field carries its length, so no two different events share a preimage.
 * Segments store the preimage bytes verbatim, so verification hashes the stored bytes
 * without re-serialising anything.
 */

export const EVENT_FORMAT_VERSION = 1;
/**
 * Format 2 (docs/ledger-format.md, Event format 2; docs/privacy.md, Decision 1): the preimage
 * is a header that commits to the payload without holding it, so the chain, the tree, proofs
 * and receipts recompute over headers alone, with no content key:
 *
 *   u8 2 ‖ u64 seq ‖ u64 ts ‖ prevHash ‖ lp(type) ‖ u32 size(JCS(payload)) ‖ c (32)
 *   c = HMAC-SHA256(k_c, u64 seq ‖ lp(type) ‖ JCS(payload))
 */
export const EVENT_FORMAT_V2 = 2;
const FIXED_BYTES = 1 + 8 + 8 + HASH_BYTES + 4 + 4;
const FIXED_BYTES_V2 = FIXED_BYTES + COMMITMENT_BYTES;
const PREV_HASH_OFFSET = 17;
const MAX_SAFE_SEQ = Number.MAX_SAFE_INTEGER;

export interface EventInput {
  type: string;
  payload: JsonValue;
}

/** An event as stored and returned: every field is covered by `hash`. */
export interface LedgerEvent {
  seq: number;
  ts: number;
  type: string;
  payload: JsonValue;
  prevHash: string;
  hash: string;
  /** Format 2 only (absent for format 1): the header's fields that `hash` covers. */
  format?: 2;
  /** Bytes of JCS(payload). */
  size?: number;
  /** c, the payload commitment (hex). */
  commitment?: string;
}

/** An event as held in a segment: its preimage bytes and hash, decoded lazily. */
export interface SealedEvent {
  seq: number;
  ts: number;
  type: string;
  prevHash: string;
  hash: string;
  /** The exact bytes that were hashed. */
  preimage: Uint8Array;
  /** Offset and length of the canonical payload inside `preimage` (format 2: its length). */
  payloadOffset: number;
  /**
   * Format 2 only: the canonical payload, which the preimage commits to but does not hold;
   * absent when the segment was read without its content key (headers only).
   */
  payloadText?: string;
}

/** The event format of a sealed event (its preimage's first byte). */
export const eventFormat = (event: SealedEvent): number => event.preimage[0] ?? 0;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

const checkUint = (name: string, value: number) => {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_SAFE_SEQ) {
    throw new InvalidInputError(`${name} must be a non-negative safe integer`);
  }
};

/** Builds the preimage of one event; `payloadJson` must already be canonical. */
export const encodePreimage = (
  seq: number,
  ts: number,
  type: string,
  prevHash: string,
  payloadJson: string,
): Buffer => {
  checkHeaderFields(seq, ts, prevHash);
  const typeLength = Buffer.byteLength(type, 'utf8');
  const payloadLength = Buffer.byteLength(payloadJson, 'utf8');
  const buf = Buffer.allocUnsafe(FIXED_BYTES + typeLength + payloadLength);
  const at = writeHeadFields(buf, EVENT_FORMAT_VERSION, seq, ts, prevHash, type, typeLength);
  buf.writeUInt32BE(payloadLength, at);
  buf.write(payloadJson, at + 4, payloadLength, 'utf8');
  return buf;
};

const checkHeaderFields = (seq: number, ts: number, prevHash: string) => {
  checkUint('seq', seq);
  checkUint('ts', ts);
  if (!isHexHash(prevHash)) throw new InvalidInputError('prevHash must be 64 lowercase hex chars');
};

/**
 * Writes what both preimage formats start with (version, seq, ts, prevHash, the type with its
 * length) into `buf`; answers the offset of the payload-length field that follows.
 */
const writeHeadFields = (
  buf: Buffer,
  version: number,
  seq: number,
  ts: number,
  prevHash: string,
  type: string,
  typeLength: number,
): number => {
  buf.writeUInt8(version, 0);
  buf.writeUInt32BE(Math.floor(seq / 2 ** 32), 1);
  buf.writeUInt32BE(seq >>> 0, 5);
  buf.writeUInt32BE(Math.floor(ts / 2 ** 32), 9);
  buf.writeUInt32BE(ts >>> 0, 13);
  buf.write(prevHash, PREV_HASH_OFFSET, HASH_BYTES, 'hex');
  const at = PREV_HASH_OFFSET + HASH_BYTES;
  buf.writeUInt32BE(typeLength, at);
  buf.write(type, at + 4, typeLength, 'utf8');
  return at + 4 + typeLength;
};

/** Builds the header preimage of one format 2 event. */
export const encodeHeaderV2 = (
  seq: number,
  ts: number,
  type: string,
  prevHash: string,
  payloadSize: number,
  commitment: Uint8Array,
): Buffer => {
  checkHeaderFields(seq, ts, prevHash);
  if (commitment.length !== COMMITMENT_BYTES) throw new InvalidInputError('commitment is 32 bytes');
  if (!Number.isSafeInteger(payloadSize) || payloadSize < 0 || payloadSize > 0xffffffff) {
    throw new InvalidInputError('payload size out of range');
  }
  const typeLength = Buffer.byteLength(type, 'utf8');
  const buf = Buffer.allocUnsafe(FIXED_BYTES_V2 + typeLength);
  const at = writeHeadFields(buf, EVENT_FORMAT_V2, seq, ts, prevHash, type, typeLength);
  buf.writeUInt32BE(payloadSize, at);
  buf.set(commitment, at + 4);
  return buf;
};

/** The payload size and commitment a format 2 header holds (layout already checked). */
export const headerCommitment = (preimage: Uint8Array): { size: number; commitment: Buffer } => {
  const buf = Buffer.from(preimage.buffer, preimage.byteOffset, preimage.byteLength);
  return {
    size: buf.readUInt32BE(buf.length - COMMITMENT_BYTES - 4),
    commitment: buf.subarray(buf.length - COMMITMENT_BYTES),
  };
};

/** Seals one format 2 event under the stream's commitment key. */
export const sealEventV2 = (
  seq: number,
  ts: number,
  prevHash: string,
  input: EventInput,
  commitKey: Uint8Array,
): SealedEvent => {
  const payloadText = canonicalJson(input.payload);
  const commitment = payloadCommitment(commitKey, seq, input.type, payloadText);
  const size = Buffer.byteLength(payloadText, 'utf8');
  const preimage = encodeHeaderV2(seq, ts, input.type, prevHash, size, commitment);
  return {
    seq,
    ts,
    type: input.type,
    prevHash,
    hash: sha256(preimage).toString('hex'),
    preimage,
    payloadOffset: preimage.length,
    payloadText,
  };
};

/**
 * Whether `payloadText` is the payload a format 2 event's header commits to (size and
 * commitment): the binding rule for a payload that is not inside the hashed bytes.
 */
export const payloadBound = (
  commitKey: Uint8Array,
  event: Pick<SealedEvent, 'seq' | 'type' | 'preimage'>,
  payloadText: string,
): boolean => {
  const { size, commitment } = headerCommitment(event.preimage);
  return (
    Buffer.byteLength(payloadText, 'utf8') === size &&
    commitmentMatches(commitKey, event.seq, event.type, payloadText, commitment)
  );
};

/** Seals one event: canonical payload, preimage, hash. */
export const sealEvent = (
  seq: number,
  ts: number,
  prevHash: string,
  input: EventInput,
): SealedEvent => {
  const preimage = encodePreimage(seq, ts, input.type, prevHash, canonicalJson(input.payload));
  return {
    seq,
    ts,
    type: input.type,
    prevHash,
    hash: sha256(preimage).toString('hex'),
    preimage,
    payloadOffset: FIXED_BYTES + Buffer.byteLength(input.type, 'utf8'),
  };
};

/**
 * Seals a batch that continues a chain whose head is (`headSeq`, `headHash`): format 1, or
 * format 2 when the stream's commitment key is given.
 */
export const sealBatch = (
  headSeq: number,
  headHash: string,
  ts: number,
  inputs: EventInput[],
  commitKey?: Uint8Array,
): SealedEvent[] => {
  const sealed: SealedEvent[] = [];
  let prev = headHash;
  for (const [i, input] of inputs.entries()) {
    const seq = headSeq + 1 + i;
    const event =
      commitKey === undefined
        ? sealEvent(seq, ts, prev, input)
        : sealEventV2(seq, ts, prev, input, commitKey);
    sealed.push(event);
    prev = event.hash;
  }
  return sealed;
};

/**
 * Checks the layout of a preimage without decoding strings: version, field lengths within
 * bounds, no trailing bytes. Returns the offset of the payload (format 2: the header's
 * length, the payload being elsewhere), or a reason it is malformed.
 */
export const preimageLayout = (buf: Buffer): number | string => {
  if (buf.length < FIXED_BYTES) return 'event record too short';
  const typeLength = buf.readUInt32BE(PREV_HASH_OFFSET + HASH_BYTES);
  const typeStart = PREV_HASH_OFFSET + HASH_BYTES + 4;
  if (buf[0] === EVENT_FORMAT_V2) {
    if (typeStart + typeLength + 4 + COMMITMENT_BYTES !== buf.length) {
      return 'header length does not match record';
    }
    return buf.length;
  }
  if (buf[0] !== EVENT_FORMAT_VERSION) return `unknown event format ${buf[0]}`;
  if (typeStart + typeLength + 4 > buf.length) return 'type overruns record';
  const payloadOffset = typeStart + typeLength + 4;
  if (payloadOffset + buf.readUInt32BE(typeStart + typeLength) !== buf.length) {
    return 'payload length does not match record';
  }
  return payloadOffset;
};

/** The seq field of a preimage (layout already checked). */
export const preimageSeq = (buf: Buffer): number =>
  buf.readUInt32BE(1) * 2 ** 32 + buf.readUInt32BE(5);

/** The raw prevHash bytes of a preimage (layout already checked). */
export const preimagePrevHash = (buf: Buffer): Buffer =>
  buf.subarray(PREV_HASH_OFFSET, PREV_HASH_OFFSET + HASH_BYTES);

/**
 * Reads the fields of a preimage (no hashing). Throws InvalidFormatError when the bytes are
 * not a well-formed v1 preimage: lengths out of bounds, trailing bytes, bad UTF-8.
 */
export const parsePreimage = (preimage: Uint8Array, hash: string): SealedEvent => {
  const buf = Buffer.from(preimage.buffer, preimage.byteOffset, preimage.byteLength);
  const payloadOffset = preimageLayout(buf);
  if (typeof payloadOffset === 'string') throw new InvalidFormatError(payloadOffset);
  const seq = preimageSeq(buf);
  const ts = buf.readUInt32BE(9) * 2 ** 32 + buf.readUInt32BE(13);
  if (seq > MAX_SAFE_SEQ || ts > MAX_SAFE_SEQ) throw new InvalidFormatError('seq or ts too large');
  const typeStart = PREV_HASH_OFFSET + HASH_BYTES + 4;
  let type: string;
  try {
    const typeEnd =
      buf[0] === EVENT_FORMAT_V2 ? buf.length - COMMITMENT_BYTES - 4 : payloadOffset - 4;
    type = decoder.decode(buf.subarray(typeStart, typeEnd));
  } catch (err) {
    throw new InvalidFormatError('type is not UTF-8', { cause: err });
  }
  const prevHash = preimagePrevHash(buf).toString('hex');
  return { seq, ts, type, prevHash, hash, preimage, payloadOffset };
};

/**
 * The canonical JSON text of a sealed event's payload. A format 2 event read without its
 * content key has none: ContentSealedError.
 */
export const payloadJsonOf = (event: SealedEvent): string => {
  if (event.preimage[0] !== EVENT_FORMAT_V2) {
    return decoder.decode(event.preimage.subarray(event.payloadOffset));
  }
  if (event.payloadText === undefined) throw new ContentSealedError(`payload of seq ${event.seq}`);
  return event.payloadText;
};

/** The public form of a sealed event (parses the payload). */
export const toLedgerEvent = (event: SealedEvent): LedgerEvent => {
  const text = payloadJsonOf(event); // ContentSealedError passes through as it is
  let payload: JsonValue;
  try {
    payload = JSON.parse(text) as JsonValue;
  } catch (err) {
    throw new InvalidFormatError(`payload of seq ${event.seq} is not JSON`, { cause: err });
  }
  return {
    seq: event.seq,
    ts: event.ts,
    type: event.type,
    payload,
    prevHash: event.prevHash,
    hash: event.hash,
    ...v2Fields(event),
  };
};

/** The format 2 fields of a sealed event's public form (none for format 1). */
export const v2Fields = (
  event: SealedEvent,
): Pick<LedgerEvent, 'format' | 'size' | 'commitment'> => {
  if (event.preimage[0] !== EVENT_FORMAT_V2) return {};
  const { size, commitment } = headerCommitment(event.preimage);
  return { format: 2, size, commitment: commitment.toString('hex') };
};

/**
 * Recomputes the hash of a public event from its fields (used by clients and tests). A format
 * 2 event's hash covers its header: with `commitKey` the commitment is recomputed from the
 * payload shown (the payload is bound); without it the hash is recomputed over the stated
 * size and commitment, which binds the header only, and `payloadBound` is false.
 */
export const hashLedgerEvent = (
  event: Omit<LedgerEvent, 'hash'>,
  commitKey?: Uint8Array,
): string => {
  if (event.format === undefined) {
    return sha256(
      encodePreimage(event.seq, event.ts, event.type, event.prevHash, canonicalJson(event.payload)),
    ).toString('hex');
  }
  if (event.format !== EVENT_FORMAT_V2) throw new InvalidInputError('unknown event format');
  let size = event.size;
  let commitment: Buffer;
  if (commitKey !== undefined) {
    const text = canonicalJson(event.payload);
    size = Buffer.byteLength(text, 'utf8');
    commitment = payloadCommitment(commitKey, event.seq, event.type, text);
  } else {
    if (typeof event.commitment !== 'string' || !isHexHash(event.commitment)) {
      throw new InvalidInputError('a format 2 event carries its commitment');
    }
    commitment = Buffer.from(event.commitment, 'hex');
  }
  if (size === undefined) throw new InvalidInputError('a format 2 event carries its size');
  return sha256(
    encodeHeaderV2(event.seq, event.ts, event.type, event.prevHash, size, commitment),
  ).toString('hex');
};

/**
 * The genesis prevHash of a stream: binds seq 1 (and so the whole chain) to its tenant and
 * stream, so that a segment copied to another stream or tenant fails verification.
 *   SHA-256("hefesto/genesis/v1" ‖ u32 len(tenant) ‖ tenant ‖ u32 len(stream) ‖ stream)
 */
export const genesisHash = (tenant: string, stream: string): string => {
  const tag = encoder.encode('hefesto/genesis/v1');
  const t = encoder.encode(tenant);
  const s = encoder.encode(stream);
  const buf = Buffer.alloc(tag.length + 8 + t.length + s.length);
  buf.set(tag, 0);
  buf.writeUInt32BE(t.length, tag.length);
  buf.set(t, tag.length + 4);
  buf.writeUInt32BE(s.length, tag.length + 4 + t.length);
  buf.set(s, tag.length + 8 + t.length);
  return sha256(buf).toString('hex');
};
