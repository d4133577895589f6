import { UnavailableError } from '../domain/errors.js';

/**
 * Retry with capped exponential backoff and full jitter, for the retryable failures of a
 * backing store (throttling, 503 SlowDown, S3 409 ConditionalRequestConflict). Only adapters
 * use it: by the time an error leaves an adapter it is a domain error.
 */
export interface RetryOptions {
  /** Total attempts including the first. Default 6. */
  maxAttempts?: number;
  /** First backoff ceiling in ms. Default 20. */
  baseDelayMs?: number;
  /** Backoff ceiling cap in ms. Default 1000. */
  maxDelayMs?: number;
  /** Injected for tests. Default setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /** Injected for tests. Default Math.random. */
  random?: () => number;
}

export const DEFAULT_RETRY: Required<Omit<RetryOptions, 'sleep' | 'random'>> = {
  maxAttempts: 6,
  baseDelayMs: 20,
  maxDelayMs: 1000,
};

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const withRetries = async <T>(
  what: string,
  attempt: () => Promise<T>,
  isRetryable: (err: unknown) => boolean,
  options: RetryOptions = {},
): Promise<T> => {
  const { maxAttempts, baseDelayMs, maxDelayMs } = { ...DEFAULT_RETRY, ...options };
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isRetryable(err)) throw err;
      if (n >= maxAttempts) {
        throw new UnavailableError(`${what} still failing after ${n} attempts`, { cause: err });
      }
      await sleep(Math.floor(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (n - 1))));
    }
  }
};
