import { canonicalJson } from '../domain/canonical.js';
import { PayloadTooLargeError } from '../domain/errors.js';
import type { EventInput } from '../domain/event.js';

/** Request size limits of the HTTP API. Settings may lower or raise them. */
export interface HttpLimits {
  /** Events in one append. */
  maxEvents: number;
  /** One event payload, measured as its canonical (RFC 8785) JSON in UTF-8 bytes. */
  maxPayloadBytes: number;
  /** A whole request body, in bytes. */
  maxBodyBytes: number;
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxEvents: 500,
  maxPayloadBytes: 256 * 1024,
  maxBodyBytes: 4 * 1024 * 1024,
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
