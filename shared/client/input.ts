import { HefestoApiError } from './errors.js';

/** Internal to the client (not exported by the package): input checks shared by its modules. */

/**
 * Runs `fn` on a caller's value: a value that is not JSON is the client's ErrInvalidInput.
 *
 * @example
 * ```ts
 * const { ref } = asInput(() => chunksOfValue(value));
 * ```
 */
export const asInput = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (err) {
    if (err instanceof HefestoApiError) throw err;
    throw new HefestoApiError('ErrInvalidInput', 0, (err as Error).message, undefined, {
      cause: err,
    });
  }
};
