import type { JsonValue } from './canonical.js';
import { InvalidInputError } from './errors.js';
import type { ExpiryHint, JsonObject } from './state.js';

/**
 * Entries that expire inside a stream's state, and the hint a delta carries about them
 * (docs/records-v2.md, `expiry`): the object at `path` holds entries, each an object whose
 * `field` is a time (ms) it expires at; `at` is the earliest of them, as the writer saw it.
 * Generic: a LangGraph store's items (`/items`, `x`) are one use, and nothing here knows it.
 *
 * The hint only says when to look. What is expired is decided here from the verified state
 * and the server's clock: an entry whose `field` is not a number, or is after now, is never
 * expired, whatever `at` says.
 */

const MAX_PATH = 1024;
const FIELD = /^[A-Za-z0-9_$-]{1,64}$/;

/** The request's hint, checked (bad input: 400, nothing written). */
export const checkExpiryHint = (hint: unknown): ExpiryHint => {
  const h = hint as Partial<ExpiryHint> | null;
  if (
    typeof h !== 'object' ||
    h === null ||
    !Number.isSafeInteger(h.at) ||
    (h.at as number) < 0 ||
    typeof h.path !== 'string' ||
    h.path.length > MAX_PATH ||
    (h.path !== '' && !h.path.startsWith('/')) ||
    typeof h.field !== 'string' ||
    !FIELD.test(h.field) ||
    Object.keys(h).length !== 3
  ) {
    throw new InvalidInputError(
      'expiry must be { at: ms (integer >= 0), path: a JSON pointer, field: 1-64 of A-Z a-z 0-9 _ $ - }',
    );
  }
  return { at: h.at as number, path: h.path, field: h.field };
};

/** The hint a (verified) delta payload carries, or undefined: none, or not one. */
export const hintOf = (payload: unknown): ExpiryHint | undefined => {
  const expiry = (payload as { expiry?: unknown } | null)?.expiry;
  if (expiry === undefined) return undefined;
  try {
    return checkExpiryHint(expiry);
  } catch {
    return undefined;
  }
};

const unescapePart = (part: string) => part.replaceAll('~1', '/').replaceAll('~0', '~');
export const escapePointerPart = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

const isObject = (v: JsonValue | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The object at `path` in `state`, or undefined (absent, or not an object). */
const objectAt = (state: JsonObject, path: string): JsonObject | undefined => {
  let at: JsonValue | undefined = state;
  if (path === '') return state;
  for (const part of path.slice(1).split('/')) {
    if (!isObject(at)) return undefined;
    at = at[unescapePart(part)];
  }
  return isObject(at) ? at : undefined;
};

export interface ExpiredEntries {
  /** Keys of the entries expired at `now` (at most `max`, in key order). */
  keys: string[];
  /** The earliest expiry of the entries that stay (undefined: none has one). */
  next: number | undefined;
}

/** The entries of `state` expired at `now`, by the hint's path and field (the hint's `at` is not read). */
export const expiredEntries = (
  state: JsonObject,
  hint: Pick<ExpiryHint, 'path' | 'field'>,
  now: number,
  max: number,
): ExpiredEntries => {
  const keys: string[] = [];
  let next: number | undefined;
  const container = objectAt(state, hint.path);
  for (const key of Object.keys(container ?? {}).sort()) {
    const entry = container?.[key];
    const x = isObject(entry) ? entry[hint.field] : undefined;
    if (typeof x !== 'number' || !Number.isFinite(x)) continue;
    if (x <= now && keys.length < max) keys.push(key);
    else next = next === undefined ? x : Math.min(next, x);
  }
  return { keys, next };
};

/** The delete ops of the expired entries. */
export const expiryOps = (path: string, keys: string[]) =>
  keys.map((key) => ({ op: 'delete' as const, path: `${path}/${escapePointerPart(key)}` }));
