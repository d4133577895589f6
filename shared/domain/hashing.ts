import { hash } from 'node:crypto';

/**
 * SHA-256 helpers. `crypto.hash` (Node >= 20.12) is the one-shot form: for the small inputs
 * of a ledger event it is markedly cheaper than createHash().update().digest().
 */

export const HASH_BYTES = 32;

export const sha256 = (data: Uint8Array | string): Buffer =>
  hash('sha256', data, 'buffer') as unknown as Buffer;

export const sha256Hex = (data: Uint8Array | string): string => hash('sha256', data, 'hex');

export const HEX_HASH_PATTERN = /^[0-9a-f]{64}$/;

export const isHexHash = (value: unknown): value is string =>
  typeof value === 'string' && HEX_HASH_PATTERN.test(value);
