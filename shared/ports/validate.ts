import { InvalidInputError } from '../domain/errors.js';
import { OBJECT_KEY_PATTERN } from './object-store.js';
import {
  ATTR_NAME_PATTERN,
  type Condition,
  type Item,
  type ItemKey,
  MAX_TRANSACT_OPS,
  type TransactOp,
  type UpdateSpec,
} from './record-store.js';

/**
 * Argument checks every adapter runs before touching storage, so that a bad call fails the
 * same way on memory, local and AWS.
 */

const RESERVED_ATTRS = new Set(['pk', 'sk']);

export const checkObjectKey = (key: string): void => {
  if (!OBJECT_KEY_PATTERN.test(key)) throw new InvalidInputError(`invalid object key: ${key}`);
};

export const checkItemKey = (key: ItemKey): void => {
  for (const part of [key.pk, key.sk]) {
    if (typeof part !== 'string' || part.length === 0 || part.length > 1024) {
      throw new InvalidInputError('item keys need non-empty pk and sk of at most 1024 chars');
    }
  }
};

const checkAttrName = (attr: string): void => {
  if (!ATTR_NAME_PATTERN.test(attr)) throw new InvalidInputError(`invalid attribute: ${attr}`);
};

export const checkItem = (item: Item): void => {
  checkItemKey(item);
  for (const [attr, value] of Object.entries(item)) {
    checkAttrName(attr);
    if (attr === 'ttl' && value !== undefined && typeof value !== 'number') {
      throw new InvalidInputError('ttl must be a number of epoch seconds');
    }
  }
};

export const checkConditions = (conditions: Condition[] = []): void => {
  for (const c of conditions) {
    if ('attr' in c) checkAttrName(c.attr);
    if (c.op === 'any') checkConditions(c.conditions);
  }
};

export const checkUpdate = (update: UpdateSpec): void => {
  for (const attr of [...Object.keys(update.set ?? {}), ...(update.remove ?? [])]) {
    checkAttrName(attr);
    if (RESERVED_ATTRS.has(attr)) throw new InvalidInputError(`cannot update key attr ${attr}`);
  }
};

export const checkTransaction = (ops: TransactOp[]): void => {
  if (ops.length === 0 || ops.length > MAX_TRANSACT_OPS) {
    throw new InvalidInputError(`a transaction takes 1..${MAX_TRANSACT_OPS} operations`);
  }
  const seen = new Set<string>();
  for (const op of ops) {
    const key = op.kind === 'put' ? op.item : op.key;
    const id = JSON.stringify([key.pk, key.sk]);
    if (seen.has(id)) throw new InvalidInputError('a transaction may touch each key only once');
    seen.add(id);
    if (op.kind === 'put') checkItem(op.item);
    else checkItemKey(op.key);
    if (op.kind === 'update') checkUpdate(op.update);
    checkConditions(op.conditions);
  }
};
