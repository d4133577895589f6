import type { Condition, Item, ItemKey, JsonValue, Scalar, UpdateSpec } from './record-store.js';

/**
 * Condition and update semantics shared by the adapters that evaluate them in process
 * (memory, local). The AWS adapter compiles the same conditions to DynamoDB expressions;
 * the contract suite checks that all of them agree.
 */

export const keyOf = (key: ItemKey): string => JSON.stringify([key.pk, key.sk]);

export const isExpired = (item: Item, nowMs: number): boolean =>
  typeof item.ttl === 'number' && item.ttl * 1000 <= nowMs;

const compare = (actual: JsonValue | undefined, op: string, value: Scalar): boolean => {
  if (actual === undefined) return false;
  if (op === 'eq') return actual === value;
  if (op === 'ne') return actual !== value;
  // Ordered comparisons only between values of the same scalar type, as in DynamoDB.
  if (typeof actual !== typeof value || typeof actual === 'boolean' || actual === null) {
    return false;
  }
  const a = actual as string | number;
  const v = value as string | number;
  switch (op) {
    case 'lt':
      return a < v;
    case 'lte':
      return a <= v;
    case 'gt':
      return a > v;
    case 'gte':
      return a >= v;
    default:
      return false;
  }
};

export const conditionHolds = (item: Item | undefined, condition: Condition): boolean => {
  switch (condition.op) {
    case 'exists':
      return item !== undefined;
    case 'notExists':
      return item === undefined;
    case 'attrNotExists':
      return item === undefined || item[condition.attr] === undefined;
    case 'any':
      return condition.conditions.some((c) => conditionHolds(item, c));
    default:
      return item !== undefined && compare(item[condition.attr], condition.op, condition.value);
  }
};

export const conditionsHold = (item: Item | undefined, conditions: Condition[] = []): boolean =>
  conditions.every((c) => conditionHolds(item, c));

/** The item after applying an update (a new object; the input is not changed). */
export const applyUpdate = (key: ItemKey, item: Item | undefined, update: UpdateSpec): Item => {
  const next: Item = { ...(item ?? {}), ...(update.set ?? {}), pk: key.pk, sk: key.sk };
  for (const attr of update.remove ?? []) delete next[attr];
  return next;
};
