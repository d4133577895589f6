/**
 * Waiting in tests for something to happen, never for a fixed time: a poll with a deadline, so
 * a wait that cannot end fails naming what it waited for instead of hanging until the test's
 * timeout.
 */

export interface WaitOptions {
  /** Fails after this long (default 10 s). */
  timeoutMs?: number;
  /** Between two looks (default 5 ms). */
  everyMs?: number;
}

/** Resolves once `predicate` holds; throws `timed out waiting for <what>` past the deadline. */
export const waitUntil = async (
  what: string,
  predicate: () => boolean | Promise<boolean>,
  { timeoutMs = 10_000, everyMs = 5 }: WaitOptions = {},
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
};
