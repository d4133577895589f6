import canonicalize from 'canonicalize';
import { InvalidInputError } from './errors.js';

/**
 * A JSON value. Defined here, in the domain, so that the client package (which ships this
 * file) depends on no port; the RecordStore port re-exports it.
 */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * RFC 8785 (JCS) canonical JSON, the one encoding of payloads and state that is hashed.
 * We use the `canonicalize` package rather than our own serializer: JCS number formatting
 * and string escaping are easy to get subtly wrong.
 */
export const canonicalJson = (value: unknown): string => {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (err) {
    throw new InvalidInputError(`value is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (text === undefined) throw new InvalidInputError('value is not JSON');
  return text;
};

const encoder = new TextEncoder();

export const canonicalBytes = (value: unknown): Uint8Array => encoder.encode(canonicalJson(value));
