import { ConflictError } from './errors.js';

/** What an attempt answers when it saw the race lost before writing: look again. */
export const RETRY: unique symbol = Symbol('optimistic.retry');

export interface OptimisticOptions<T> {
  /** Attempts (read, decide, conditional write) before giving up; at least 1. */
  attempts: number;
  /**
   * Which failures of an attempt mean "someone else wrote first: read again" (default: a
   * ConflictError, a conditional write that lost). Anything else is thrown as it is.
   */
  retryOn?: (err: unknown) => boolean;
  /** The answer once every attempt lost: throw (usually ErrUnavailable) or answer a value. */
  exhausted: () => T | Promise<T>;
}

const lostRace = (err: unknown) => err instanceof ConflictError;

/**
 * The one optimistic-update loop (compare-and-swap): `attempt` reads what it needs, decides,
 * and writes on condition that what it read still stands; a write that loses (retryOn) or an
 * attempt that answers RETRY starts over from the read, at most `attempts` times. An attempt
 * maps a lost condition it can name (e.g. the transaction's item that says "the stream is
 * gone") to its own error by catching it before it leaves the attempt.
 *
 * @example
 * ```ts
 * const granted = await optimistic(
 *   async () => {
 *     const current = await records.get(key);
 *     await records.put(next(current), { conditions: [same(current)] });
 *     return next(current);
 *   },
 *   { attempts: 5, exhausted: () => { throw new UnavailableError('kept changing'); } },
 * );
 * ```
 */
export const optimistic = async <T>(
  attempt: (n: number) => Promise<T | typeof RETRY>,
  options: OptimisticOptions<T>,
): Promise<T> => {
  const retryOn = options.retryOn ?? lostRace;
  for (let n = 0; n < Math.max(1, options.attempts); n++) {
    try {
      const out = await attempt(n);
      if (out !== RETRY) return out;
    } catch (err) {
      if (!retryOn(err)) throw err;
    }
  }
  return options.exhausted();
};
