import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { InvalidFormatError } from '../errors.js';
import { lp } from './stream-keys.js';

/**
 * The sealed form of a content-bearing object or record body (docs/privacy.md, Decision 4):
 * compressed, then encrypted with AES-256-GCM, bound by its AAD to where it sits.
 *
 *   aad    = "hefesto/v1" ‖ lp(tenant) ‖ lp(stream) ‖ lp(kind) ‖ lp(place) ‖ u32 keyVersion
 *   sealed = u8 1 (seal format) ‖ u8 flags (bit 0: DEFLATE-raw) ‖ u32 keyVersion
 *          ‖ nonce (12) ‖ AES-256-GCM(k_e, body, aad) ‖ tag (16)
 *
 * `place` is the object key or the record's sk; `kind` the storage kind. A ciphertext moved
 * to another place, stream, tenant or kind fails to open.
 */

export const SEAL_FORMAT = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX_BYTES = 1 + 1 + 4;
const FLAG_DEFLATE = 1;

export interface SealPlace {
  tenant: string;
  stream: string;
  kind: string;
  place: string;
}

export const sealAad = (at: SealPlace, keyVersion: number): Buffer => {
  const v = Buffer.allocUnsafe(4);
  v.writeUInt32BE(keyVersion, 0);
  return Buffer.concat([
    Buffer.from('hefesto/v1', 'utf8'),
    lp(at.tenant),
    lp(at.stream),
    lp(at.kind),
    lp(at.place),
    v,
  ]);
};

export interface SealOptions {
  keyVersion?: number;
  compress?: boolean;
  /** Tests and vectors only: a fixed nonce. Writers draw 96 random bits per object. */
  nonce?: Uint8Array;
}

export const sealContent = (
  contentKey: Uint8Array,
  at: SealPlace,
  body: Uint8Array,
  options: SealOptions = {},
): Buffer => {
  const keyVersion = options.keyVersion ?? 0;
  const compress = options.compress ?? true;
  const nonce = options.nonce ?? randomBytes(NONCE_BYTES);
  const plain = compress ? deflateRawSync(body) : body;
  const cipher = createCipheriv('aes-256-gcm', contentKey, nonce);
  cipher.setAAD(sealAad(at, keyVersion));
  const prefix = Buffer.allocUnsafe(PREFIX_BYTES);
  prefix.writeUInt8(SEAL_FORMAT, 0);
  prefix.writeUInt8(compress ? FLAG_DEFLATE : 0, 1);
  prefix.writeUInt32BE(keyVersion, 2);
  const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([prefix, nonce, ct, cipher.getAuthTag()]);
};

/** The content key version a sealed body names (to pick its key before opening it). */
export const sealKeyVersion = (sealed: Uint8Array): number => {
  if (sealed.length < PREFIX_BYTES + NONCE_BYTES + TAG_BYTES || sealed[0] !== SEAL_FORMAT) {
    throw new InvalidFormatError('not a sealed body');
  }
  return Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength).readUInt32BE(2);
};

/**
 * Opens a sealed body; throws InvalidFormatError when it does not authenticate (wrong key,
 * wrong place, a flipped byte): callers report it as tampering of that object or record.
 */
export const openContent = (
  contentKey: Uint8Array,
  at: SealPlace,
  sealed: Uint8Array,
  maxBytes = 2 ** 31 - 1,
): Buffer => {
  const keyVersion = sealKeyVersion(sealed);
  const buf = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  const flags = buf[1] ?? 0;
  if ((flags & ~FLAG_DEFLATE) !== 0) throw new InvalidFormatError('sealed body has unknown flags');
  const nonce = buf.subarray(PREFIX_BYTES, PREFIX_BYTES + NONCE_BYTES);
  const tag = buf.subarray(buf.length - TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', contentKey, nonce);
  decipher.setAAD(sealAad(at, keyVersion));
  decipher.setAuthTag(tag);
  let plain: Buffer;
  try {
    plain = Buffer.concat([
      decipher.update(buf.subarray(PREFIX_BYTES + NONCE_BYTES, buf.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch (err) {
    throw new InvalidFormatError('sealed body does not authenticate', { cause: err });
  }
  if ((flags & FLAG_DEFLATE) === 0) return plain;
  try {
    return inflateRawSync(plain, { maxOutputLength: maxBytes });
  } catch (err) {
    throw new InvalidFormatError('sealed body does not inflate', { cause: err });
  }
};
