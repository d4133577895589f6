import type { Item, UpdateSpec } from '../ports/record-store.js';

/**
 * "Is this write already applied?" for a retried conditional write whose condition now fails.
 *
 * When an attempt's reply was lost (or it failed in a way that leaves its outcome unknown),
 * the next attempt may find its own write in place and its condition therefore false. The
 * adapters then ask these questions of the item stored now: yes means the earlier attempt
 * landed and the call succeeds; no means a real conflict. A first attempt never asks: its
 * failed condition is always a conflict.
 *
 * Values compare as JSON: object key order does not matter, and an attribute holding
 * `undefined` is the same as an absent one (JSON storage drops it).
 */

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deep equality on JSON values; `undefined` object members count as absent. */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((v, i) => jsonEqual(v, b[i]))
    );
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keysA = Object.keys(a).filter((k) => a[k] !== undefined);
  const keysB = Object.keys(b).filter((k) => b[k] !== undefined);
  return keysA.length === keysB.length && keysA.every((k) => jsonEqual(a[k], b[k]));
};

/** A put is applied when the stored item equals the item it wrote. */
export const putApplied = (current: Item | undefined, item: Item): boolean =>
  current !== undefined && jsonEqual(current, item);

/**
 * An update is applied when every attribute it sets holds that value and every attribute it
 * removes is absent. An update always leaves an item behind, so a missing item means no.
 */
export const updateApplied = (current: Item | undefined, update: UpdateSpec): boolean =>
  current !== undefined &&
  Object.entries(update.set ?? {}).every(([attr, value]) => jsonEqual(current[attr], value)) &&
  (update.remove ?? []).every((attr) => current[attr] === undefined);

/** A delete is applied when nothing is stored under the key. */
export const deleteApplied = (current: Item | undefined): boolean => current === undefined;
