import { InvalidFormatError } from './errors.js';
import { EVENT_FORMAT_V2, payloadBound, type SealedEvent } from './event.js';
import { openContent, type SealOptions, sealContent } from './privacy/content-seal.js';
import { lp } from './privacy/stream-keys.js';

/**
 * The encrypted body of a segment in format 2 (docs/ledger-format.md, Segment format 2): the
 * canonical payloads of its format 2 events, in seq order, as one sealed body, so a merged
 * segment compresses all its payloads together before encrypting them once.
 *
 *   body = seal(k_e, aad(tenant, stream, "seg", "{firstSeq}-{lastSeq}"), lp(p₁) ‖ … ‖ lp(pₙ))
 *
 * The payloads are bound twice: the AEAD tag (by whoever holds k_e) and each header's
 * commitment `c` (by whoever holds k_c; the server checks it before serving).
 */

/** The keys a reader of format 2 segments holds; without them only headers are checked. */
export interface SegmentKeys {
  /** The stream key's id (named by the segment header, bound by the keys' derivation). */
  keyId: string;
  /** k_c of the stream's key. */
  commit: Uint8Array;
  /** k_e by content key version (undefined: that version is not held). */
  content: (keyVersion: number) => Uint8Array | undefined;
  /** The version new bodies are sealed with. */
  writeVersion: number;
}

/**
 * Bodies shorter than this are sealed uncompressed: DEFLATE of one turn's few hundred bytes
 * costs more CPU (~120 µs, bench/encryption.ts) than the encryption and saves little; merged
 * segments, where payloads compress together, are well past it.
 */
export const COMPRESS_MIN_BYTES = 2048;

export const bodyPlace = (tenant: string, stream: string, firstSeq: number, lastSeq: number) => ({
  tenant,
  stream,
  kind: 'seg',
  place: `${firstSeq}-${lastSeq}`,
});

export const encodeBody = (
  keys: SegmentKeys,
  place: ReturnType<typeof bodyPlace>,
  events: SealedEvent[],
  options: Pick<SealOptions, 'compress' | 'nonce'> = {},
): Buffer => {
  const key = keys.content(keys.writeVersion);
  if (key === undefined) throw new InvalidFormatError('no content key to seal a segment with');
  const payloads = events
    .filter((e) => e.preimage[0] === EVENT_FORMAT_V2)
    .map((e) => {
      if (e.payloadText === undefined) {
        throw new InvalidFormatError(`seq ${e.seq} has no payload to seal`);
      }
      return lp(e.payloadText);
    });
  const plain = Buffer.concat(payloads);
  return sealContent(key, place, plain, {
    compress: plain.length >= COMPRESS_MIN_BYTES,
    ...options,
    keyVersion: keys.writeVersion,
  });
};

/**
 * Opens a body and gives each format 2 event its payload, checking every payload against its
 * header's commitment. Throws InvalidFormatError naming what failed (callers report the seq).
 */
export const openBody = (
  keys: SegmentKeys,
  place: ReturnType<typeof bodyPlace>,
  sealed: Uint8Array,
  events: SealedEvent[],
  keyVersion: number,
): void => {
  const key = keys.content(keyVersion);
  if (key === undefined)
    throw new InvalidFormatError(`content key version ${keyVersion} is not held`);
  const plain = openContent(key, place, sealed);
  let at = 0;
  for (const event of events) {
    if (event.preimage[0] !== EVENT_FORMAT_V2) continue;
    if (at + 4 > plain.length) throw new InvalidFormatError(`body ends before seq ${event.seq}`);
    const length = plain.readUInt32BE(at);
    if (at + 4 + length > plain.length) {
      throw new InvalidFormatError(`payload of seq ${event.seq} overruns the body`);
    }
    const text = plain.toString('utf8', at + 4, at + 4 + length);
    if (!payloadBound(keys.commit, event, text)) {
      throw new InvalidFormatError(`payload of seq ${event.seq} does not match its commitment`);
    }
    event.payloadText = text;
    at += 4 + length;
  }
  if (at !== plain.length) throw new InvalidFormatError('trailing bytes in the body');
};
