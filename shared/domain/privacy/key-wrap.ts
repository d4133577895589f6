import { createCipheriv, createDecipheriv } from 'node:crypto';
import { InvalidFormatError } from '../errors.js';
import { lp } from './stream-keys.js';

/**
 * How an embedded key-encryption key (KEK) wraps a stream secret (docs/privacy.md,
 * Decision 3). The wrap is bound to the stream and key it belongs to, so a wrapped secret
 * copied into another stream's key record does not unwrap:
 *
 *   aad     = "hefesto/v1/wrap" ‖ lp(tenant) ‖ lp(stream) ‖ lp(keyId)
 *   wrapped = u8 1 ‖ nonce (12) ‖ AES-256-GCM(KEK, S, aad) ‖ tag (16)
 *
 * AWS KMS wraps with its own format; the encryption context plays the AAD's part.
 */

export interface WrapContext {
  tenant: string;
  stream: string;
  keyId: string;
}

const WRAP_FORMAT = 1;

export const wrapAad = (ctx: WrapContext): Buffer =>
  Buffer.concat([
    Buffer.from('hefesto/v1/wrap', 'utf8'),
    lp(ctx.tenant),
    lp(ctx.stream),
    lp(ctx.keyId),
  ]);

export const wrapSecret = (
  kek: Uint8Array,
  ctx: WrapContext,
  secret: Uint8Array,
  nonce: Uint8Array,
): Buffer => {
  const cipher = createCipheriv('aes-256-gcm', kek, nonce);
  cipher.setAAD(wrapAad(ctx));
  const ct = Buffer.concat([cipher.update(secret), cipher.final()]);
  return Buffer.concat([Buffer.from([WRAP_FORMAT]), nonce, ct, cipher.getAuthTag()]);
};

export const unwrapSecret = (kek: Uint8Array, ctx: WrapContext, wrapped: Uint8Array): Buffer => {
  const buf = Buffer.from(wrapped);
  if (buf.length < 1 + 12 + 16 || buf[0] !== WRAP_FORMAT) {
    throw new InvalidFormatError('not a wrapped stream secret');
  }
  const decipher = createDecipheriv('aes-256-gcm', kek, buf.subarray(1, 13));
  decipher.setAAD(wrapAad(ctx));
  decipher.setAuthTag(buf.subarray(buf.length - 16));
  try {
    return Buffer.concat([decipher.update(buf.subarray(13, buf.length - 16)), decipher.final()]);
  } catch (err) {
    throw new InvalidFormatError('wrapped stream secret does not unwrap', { cause: err });
  }
};
