import { z } from '@hono/zod-openapi';

/**
 * The one parser of integer query parameters (`from`, `limit`, `at`, `before`, `seq`,
 * `treeSize`, `to`): canonical decimal integers only, as the API prints them. `z.coerce`
 * (JavaScript's Number()) also read `1e3`, `0x10`, `0b1`, `+1`, ` 1`, `1.0` and `01`, so one
 * value had many spellings, and an idempotent retry, a cache key or a log line could disagree
 * with the server on what was asked. Anything else is 400 ErrInvalidInput (the app's
 * validation hook); at most 16 digits, so no string is long enough to cost anything to read.
 * The OpenAPI document shows an integer with its bounds.
 */

const CANONICAL_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

export interface QueryIntOptions {
  min: number;
  /** Default: 2^53 - 1. */
  max?: number;
  description?: string;
}

export const queryInt = ({ min, max = Number.MAX_SAFE_INTEGER, description }: QueryIntOptions) =>
  z
    .string()
    .regex(CANONICAL_INTEGER, 'must be a decimal integer (digits only, no sign or leading zero)')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .openapi({
      type: 'integer',
      minimum: min,
      maximum: max,
      pattern: undefined,
      ...(description ? { description } : {}),
    });

/** An integer query parameter with a default when absent (shown in the OpenAPI document). */
export const queryIntDefault = (options: QueryIntOptions & { default: number }) =>
  queryInt(options).default(options.default).openapi({ default: options.default });
