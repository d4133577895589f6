import type { DeltaOp, Json } from '@hefesto/client';

/**
 * The ops that turn `before` into `after` (both JSON), written so that what changed is all
 * that is sent: an object changes key by key, an array that only grew is appended to (a
 * `messages` list grown by one message is one `set .../-` op), an array of the same length
 * changes index by index; anything else is set whole.
 */

const escapeKey = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

const isObject = (v: unknown): v is { [k: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const jsonEqual = (a: Json | undefined, b: Json | undefined): boolean => {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
};

export const diffJson = (before: Json, after: Json, path = '', ops: DeltaOp[] = []): DeltaOp[] => {
  if (jsonEqual(before, after)) return ops;
  if (isObject(before) && isObject(after)) {
    for (const k of Object.keys(before)) {
      if (!Object.hasOwn(after, k)) ops.push({ op: 'delete', path: `${path}/${escapeKey(k)}` });
    }
    for (const [k, v] of Object.entries(after)) {
      const at = `${path}/${escapeKey(k)}`;
      if (!Object.hasOwn(before, k)) ops.push({ op: 'set', path: at, value: v });
      else diffJson(before[k] as Json, v, at, ops);
    }
    return ops;
  }
  if (Array.isArray(before) && Array.isArray(after) && path !== '') {
    if (after.length >= before.length && before.every((x, i) => jsonEqual(x, after[i]))) {
      for (const v of after.slice(before.length))
        ops.push({ op: 'set', path: `${path}/-`, value: v });
      return ops;
    }
    if (after.length === before.length) {
      for (const [i, v] of after.entries()) diffJson(before[i] as Json, v, `${path}/${i}`, ops);
      return ops;
    }
  }
  ops.push({ op: 'set', path, value: after });
  return ops;
};
