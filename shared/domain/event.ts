import { canonicalJson, type JsonValue } from './canonical.js';
import { InvalidFormatError, InvalidInputError } from './errors.js';
import { HASH_BYTES, isHexHash, sha256 } from './hashing.js';

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
const FIXED_BYTES = 1 + 8 + 8 + HASH_BYTES + 4 + 4;
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
  /** Offset and length of the canonical payload inside `preimage`. */
  payloadOffset: number;
}

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
  checkUint('seq', seq);
  checkUint('ts', ts);
  if (!isHexHash(prevHash)) throw new InvalidInputError('prevHash must be 64 lowercase hex chars');
  const typeLength = Buffer.byteLength(type, 'utf8');
  const payloadLength = Buffer.byteLength(payloadJson, 'utf8');
  const buf = Buffer.allocUnsafe(FIXED_BYTES + typeLength + payloadLength);
  buf.writeUInt8(EVENT_FORMAT_VERSION, 0);
  buf.writeUInt32BE(Math.floor(seq / 2 ** 32), 1);
  buf.writeUInt32BE(seq >>> 0, 5);
  buf.writeUInt32BE(Math.floor(ts / 2 ** 32), 9);
  buf.writeUInt32BE(ts >>> 0, 13);
  buf.write(prevHash, PREV_HASH_OFFSET, HASH_BYTES, 'hex');
  let at = PREV_HASH_OFFSET + HASH_BYTES;
  buf.writeUInt32BE(typeLength, at);
  buf.write(type, at + 4, typeLength, 'utf8');
  at += 4 + typeLength;
  buf.writeUInt32BE(payloadLength, at);
  buf.write(payloadJson, at + 4, payloadLength, 'utf8');
  return buf;
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

/** Seals a batch that continues a chain whose head is (`headSeq`, `headHash`). */
export const sealBatch = (
  headSeq: number,
  headHash: string,
  ts: number,
  inputs: EventInput[],
): SealedEvent[] => {
  const sealed: SealedEvent[] = [];
  let prev = headHash;
  for (const [i, input] of inputs.entries()) {
    const event = sealEvent(headSeq + 1 + i, ts, prev, input);
    sealed.push(event);
    prev = event.hash;
  }
  return sealed;
};

/**
 * Checks the layout of a v1 preimage without decoding strings: version, field lengths within
 * bounds, no trailing bytes. Returns the offset of the payload, or a reason it is malformed.
 */
export const preimageLayout = (buf: Buffer): number | string => {
  if (buf.length < FIXED_BYTES) return 'event record too short';
  if (buf[0] !== EVENT_FORMAT_VERSION) return `unknown event format ${buf[0]}`;
  const typeLength = buf.readUInt32BE(PREV_HASH_OFFSET + HASH_BYTES);
  const typeStart = PREV_HASH_OFFSET + HASH_BYTES + 4;
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
    type = decoder.decode(buf.subarray(typeStart, payloadOffset - 4));
  } catch (err) {
    throw new InvalidFormatError('type is not UTF-8', { cause: err });
  }
  const prevHash = preimagePrevHash(buf).toString('hex');
  return { seq, ts, type, prevHash, hash, preimage, payloadOffset };
};

/** The canonical JSON text of a sealed event's payload. */
export const payloadJsonOf = (event: SealedEvent): string =>
  decoder.decode(event.preimage.subarray(event.payloadOffset));

/** The public form of a sealed event (parses the payload). */
export const toLedgerEvent = (event: SealedEvent): LedgerEvent => {
  let payload: JsonValue;
  try {
    payload = JSON.parse(payloadJsonOf(event)) as JsonValue;
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
  };
};

/** Recomputes the hash of a public event from its fields (used by clients and tests). */
export const hashLedgerEvent = (event: Omit<LedgerEvent, 'hash'>): string =>
  sha256(
    encodePreimage(event.seq, event.ts, event.type, event.prevHash, canonicalJson(event.payload)),
  ).toString('hex');

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
