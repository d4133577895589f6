import { createHmac, timingSafeEqual } from 'node:crypto';
import { lp } from './stream-keys.js';

/**
 * The payload commitment of an event in format 2 (docs/ledger-format.md, Event format 2):
 *
 *   c = HMAC-SHA256(k_c, u64 seq ‖ lp(type) ‖ JCS(payload))
 *
 * `seq` is bound so that two equal payloads commit differently (headers leak no equality);
 * `type` so that a payload cannot be reread under another type.
 */

export const COMMITMENT_BYTES = 32;

export const payloadCommitment = (
  commitKey: Uint8Array,
  seq: number,
  type: string,
  payloadJson: string | Uint8Array,
): Buffer => {
  const seqBytes = Buffer.allocUnsafe(8);
  seqBytes.writeUInt32BE(Math.floor(seq / 2 ** 32), 0);
  seqBytes.writeUInt32BE(seq >>> 0, 4);
  return createHmac('sha256', commitKey)
    .update(seqBytes)
    .update(lp(type))
    .update(typeof payloadJson === 'string' ? Buffer.from(payloadJson, 'utf8') : payloadJson)
    .digest();
};

/** Whether `payloadJson` is the payload that `commitment` commits to (constant time). */
export const commitmentMatches = (
  commitKey: Uint8Array,
  seq: number,
  type: string,
  payloadJson: string | Uint8Array,
  commitment: Uint8Array,
): boolean =>
  commitment.length === COMMITMENT_BYTES &&
  timingSafeEqual(payloadCommitment(commitKey, seq, type, payloadJson), commitment);
