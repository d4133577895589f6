import type { Json } from '@hefesto/client';
import { type AgentInputItem, protocol, UserError } from '@openai/agents-core';

/**
 * Items as the JSON the server stores and compares (canonical JSON, RFC 8785). What JSON
 * cannot say the same way twice is refused before anything is sent, so nothing changes and no
 * operation id is recorded (the SDK's contract for history transactions): a function, a
 * symbol, a bigint, a number that is not finite, an object that is not plain (a Date, a Map,
 * bytes), a cycle, an undefined array entry. An object property whose value is undefined is
 * left out, as JSON.stringify leaves it out: the item reads back without it.
 */

const UNSUPPORTED = 'Session history items contain invalid or unsupported data.';

const toJson = (value: unknown, ancestors: Set<object>): Json => {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new UserError(UNSUPPORTED);
    return value;
  }
  if (typeof value !== 'object') throw new UserError(UNSUPPORTED);
  if (ancestors.has(value)) throw new UserError(UNSUPPORTED);
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      return Array.from({ length: value.length }, (_, i) => {
        if (!Object.hasOwn(value, i) || value[i] === undefined) throw new UserError(UNSUPPORTED);
        return toJson(value[i], ancestors);
      });
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) throw new UserError(UNSUPPORTED);
    const out: Record<string, Json> = {};
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key !== 'string') throw new UserError(UNSUPPORTED);
      const descriptor = Object.getOwnPropertyDescriptor(value, key);
      if (!descriptor?.enumerable || !('value' in descriptor)) throw new UserError(UNSUPPORTED);
      if (descriptor.value === undefined) continue;
      out[key] = toJson(descriptor.value, ancestors);
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
};

/** `items` as JSON (see the module comment), each one an item of the SDK's protocol. */
export const jsonItems = (items: readonly AgentInputItem[], validate = false): Json[] => {
  if (!Array.isArray(items)) throw new UserError(UNSUPPORTED);
  return items.map((item) => {
    const json = toJson(item, new Set());
    if (validate && !protocol.ModelItem.safeParse(json).success) {
      throw new UserError('Invalid session history item.');
    }
    return json;
  });
};
