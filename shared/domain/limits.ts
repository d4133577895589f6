import { canonicalJson } from './canonical.js';
import { InvalidInputError, PayloadTooLargeError } from './errors.js';
import type { EventInput } from './event.js';

/** Request size limits of the HTTP API. Settings may lower or raise them. */
export interface HttpLimits {
  /** Events in one append. */
  maxEvents: number;
  /** One event payload, measured as its canonical (RFC 8785) JSON in UTF-8 bytes. */
  maxPayloadBytes: number;
  /** A whole request body, in bytes. */
  maxBodyBytes: number;
  /**
   * Objects and arrays nested in a request body, counting the body itself: `{}` is 1 deep,
   * `{"events":[{"payload":{}}]}` 4. Deeper JSON is refused (400) before anything reads it.
   * The default, 32, is also what DynamoDB stores: an effect's intent or result (a top-level
   * attribute of its record, one level below the body) may nest 31 levels there, no more.
   */
  maxJsonDepth: number;
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxEvents: 500,
  maxPayloadBytes: 256 * 1024,
  maxBodyBytes: 4 * 1024 * 1024,
  maxJsonDepth: 32,
};

/**
 * Whether a parsed JSON value nests objects and arrays deeper than `max` (a scalar is 0
 * deep, `[]` 1). Iterative, with its own stack, so a value deep enough to overflow the call
 * stack of a recursive walk (or of JSON.stringify, at a few thousand levels) is measured
 * like any other; it stops at the first container past the limit.
 */
export const exceedsDepth = (value: unknown, max: number): boolean => {
  const pending: unknown[] = [value];
  const depths: number[] = [0];
  while (pending.length > 0) {
    const v = pending.pop();
    const depth = (depths.pop() as number) + 1;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) {
        pending.push(child);
        depths.push(depth);
      }
    }
  }
  return false;
};

/** Segments of an RFC 6901 pointer below the root (`/a/b` has 2). */
const pointerDepth = (path: string): number => {
  let n = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === 47) n++;
  return n;
};

/**
 * Checkpoint ops: a value set at `/a/b` sits two levels into the state, so the path counts
 * towards its depth. Otherwise a state could be made arbitrarily deep by setting shallow
 * values ever further down, and every later read of it would fail as a deep payload does.
 */
export const checkOpsDepth = (
  ops: Array<{ path: string; value?: unknown }>,
  limits: Pick<HttpLimits, 'maxJsonDepth'>,
): void => {
  for (const [i, op] of ops.entries()) {
    const room = limits.maxJsonDepth - pointerDepth(op.path);
    if (room < 0 || (op.value !== undefined && exceedsDepth(op.value, room))) {
      throw new InvalidInputError(
        `ops[${i}] nests deeper than ${limits.maxJsonDepth} levels into the state (path included)`,
      );
    }
  }
};

/** Page size of event reads: default and maximum (not configurable). */
export const READ_LIMIT = { default: 100, max: 1000 } as const;

/**
 * Batch and payload limits, checked before anything is written. The payload is measured in
 * the form that is hashed and stored, so a limit means the same thing to every client
 * whatever whitespace or key order it sends.
 */
export const checkAppendLimits = (events: EventInput[], limits: HttpLimits): void => {
  if (events.length > limits.maxEvents) {
    throw new PayloadTooLargeError(
      `an append takes at most ${limits.maxEvents} events, got ${events.length}`,
    );
  }
  for (const [i, event] of events.entries()) {
    const bytes = Buffer.byteLength(canonicalJson(event.payload), 'utf8');
    if (bytes > limits.maxPayloadBytes) {
      throw new PayloadTooLargeError(
        `events[${i}].payload is ${bytes} bytes as canonical JSON; the limit is ${limits.maxPayloadBytes}`,
      );
    }
  }
};
