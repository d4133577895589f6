import type { JsonValue } from '../canonical.js';

/**
 * RFC 6901 JSON Pointers with the exact rules of v1's applyOps (shared/domain/state.ts, on
 * fast-json-patch), so a v2 state accepts and refuses the same ops:
 * - a path starts with '/'; segments unescape ~1 to '/' then ~0 to '~';
 * - ops refuse `__proto__`, and `prototype` right after `constructor`, anywhere (reads by
 *   path do not: they assign nothing);
 * - an array is entered only at a canonical index below its length (no leading zeros, no '-');
 * - an object is entered only at an own member.
 */

export const unescapeSegment = (raw: string): string =>
  raw.includes('~') ? raw.replace(/~1/g, '/').replace(/~0/g, '~') : raw;

export const escapeSegment = (key: string): string =>
  key.includes('~') || key.includes('/') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;

/** Segments of a pointer below the root ('' is the root: no segments). */
export const splitPointer = (path: string): string[] | undefined => {
  if (path === '') return [];
  if (!path.startsWith('/')) return undefined;
  return path.slice(1).split('/').map(unescapeSegment);
};

export const isBanned = (segments: string[], i: number): boolean =>
  segments[i] === '__proto__' || (segments[i] === 'prototype' && segments[i - 1] === 'constructor');

const CANONICAL_INDEX = /^(0|[1-9]\d*)$/;

/** The index a segment names in an array of `length`, if it names an existing item. */
export const existingIndex = (segment: string, length: number): number | undefined => {
  if (!CANONICAL_INDEX.test(segment)) return undefined;
  const index = Number(segment);
  return index < length ? index : undefined;
};

export const isContainer = (v: unknown): v is JsonValue[] | { [key: string]: JsonValue } =>
  typeof v === 'object' && v !== null;

/** The member or item a segment names inside `container`, if it exists. */
export const childOf = (
  container: JsonValue[] | { [key: string]: JsonValue },
  segment: string,
): JsonValue | undefined => {
  if (Array.isArray(container)) {
    const index = existingIndex(segment, container.length);
    return index === undefined ? undefined : container[index];
  }
  return Object.hasOwn(container, segment) ? container[segment] : undefined;
};

/**
 * The value at `segments` inside `value`, if it exists: plain navigation through own members
 * and canonical indexes. Reads need no ban (nothing is assigned), so any stored key is read.
 */
export const valueAt = (value: JsonValue, segments: string[]): JsonValue | undefined => {
  let at: JsonValue | undefined = value;
  for (let i = 0; i < segments.length; i++) {
    if (!isContainer(at)) return undefined;
    at = childOf(at, segments[i] as string);
  }
  return at;
};
