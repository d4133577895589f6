/**
 * A large JSON response body (a whole state: up to the work budget, 80 MiB) serialized a
 * piece at a time as the socket takes it, with a turn of the event loop whenever the slice
 * of synchronous work is spent (services/loop-turns.ts), instead of one JSON.stringify that
 * holds the loop for as long as the whole text takes (a 64 MiB state: about a second) and a
 * copy of it as one string. The bytes are those JSON.stringify writes for the same value.
 */

import type { Context, TypedResponse } from 'hono';
import type { AppEnv } from './context.js';

type Pause = () => Promise<void> | undefined;

/** Text handed to the stream at a time (UTF-16 code units, about as many bytes). */
const PIECE = 64 * 1024;
/** Values serialized between two calls of `pause`. */
const VALUES_PER_PAUSE = 256;
/** Strings longer than this are written in slices of this many code units. */
const STRING_SLICE = 64 * 1024;

interface Frame {
  items: unknown[] | Record<string, unknown>;
  keys: string[] | undefined;
  i: number;
}

/**
 * JSON.stringify of `value` (plain JSON: objects, arrays, strings, finite numbers, booleans,
 * null) in pieces of about PIECE code units, pausing every VALUES_PER_PAUSE values and
 * between the slices of a long string (never splitting a surrogate pair).
 */
export async function* jsonPieces(value: unknown, pause: Pause): AsyncGenerator<string> {
  let out = '';
  let count = 0;
  const stack: Frame[] = [];
  let next: unknown = value;
  let pending = true;
  for (;;) {
    if (pending) {
      pending = false;
      const v = next;
      if (typeof v === 'string' && v.length > STRING_SLICE) {
        out += '"';
        for (let at = 0; at < v.length; ) {
          let end = Math.min(v.length, at + STRING_SLICE);
          const last = v.charCodeAt(end - 1);
          if (end < v.length && last >= 0xd800 && last <= 0xdbff) end++;
          out += JSON.stringify(v.slice(at, end)).slice(1, -1);
          at = end;
          yield out;
          out = '';
          for (let turn = pause(); turn; turn = pause()) await turn;
        }
        out += '"';
      } else if (typeof v !== 'object' || v === null) {
        out += JSON.stringify(v);
      } else if (Array.isArray(v)) {
        out += '[';
        stack.push({ items: v, keys: undefined, i: 0 });
      } else {
        out += '{';
        stack.push({ items: v as Record<string, unknown>, keys: Object.keys(v), i: 0 });
      }
    }
    const frame = stack.at(-1);
    if (!frame) break;
    const { items, keys } = frame;
    if (frame.i === (keys ?? (items as unknown[])).length) {
      stack.pop();
      out += keys ? '}' : ']';
    } else {
      if (frame.i > 0) out += ',';
      if (keys) {
        const key = keys[frame.i++] as string;
        out += `${JSON.stringify(key)}:`;
        next = (items as Record<string, unknown>)[key];
      } else {
        next = (items as unknown[])[frame.i++];
      }
      pending = true;
    }
    if (out.length >= PIECE) {
      yield out;
      out = '';
    }
    if (++count % VALUES_PER_PAUSE === 0) {
      for (let turn = pause(); turn; turn = pause()) await turn;
    }
  }
  if (out) yield out;
}

/**
 * A response body of `value`'s JSON, serialized as it is read (see above). `done` is called
 * once, when the body has been read to its end or cancelled (the client went away).
 */
export const jsonStream = (
  value: unknown,
  pause: Pause,
  done: () => void = () => {},
): ReadableStream<Uint8Array> => {
  const pieces = jsonPieces(value, pause);
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let text = '';
      try {
        while (text.length < PIECE) {
          const next = await pieces.next();
          if (next.done) {
            if (text) controller.enqueue(encoder.encode(text));
            controller.close();
            done();
            return;
          }
          text += next.value;
        }
      } catch (err) {
        done();
        throw err;
      }
      controller.enqueue(encoder.encode(text));
    },
    cancel() {
      done();
      void pieces.return(undefined);
    },
  });
};

/**
 * A 200 answer of `value` as JSON serialized as the socket takes it (jsonStream), with the
 * request's memory (memory-pool.ts) charged until the body is sent; typed as `c.json` would
 * type it, so the route's OpenAPI response still checks.
 */
export const streamedJson = <T>(
  c: Context<AppEnv>,
  value: T,
  pause: Pause,
): Response & TypedResponse<T, 200, 'json'> => {
  const done = c.get('memory')?.retain();
  return c.body(jsonStream(value, pause, done), 200, {
    'Content-Type': 'application/json',
  }) as unknown as Response & TypedResponse<T, 200, 'json'>;
};
