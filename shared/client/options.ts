import { InvalidOptionsError } from './errors.js';

/**
 * The checks a client's options get at construction, so that a mistake fails at once with a
 * message naming the option (not as a TypeError of fetch, or as retries ending in
 * ErrUnavailable after seconds).
 */

/**
 * What {@link checkClientOptions} reads: the options that have no usable default.
 *
 * @example
 * ```ts
 * const options: CheckedOptions = { baseUrl: 'http://localhost:8787', apiKey: process.env.HEFESTO_KEY };
 * ```
 */
export interface CheckedOptions {
  baseUrl?: unknown;
  apiKey?: unknown;
  timeoutMs?: unknown;
  maxValueBytes?: unknown;
}

const positiveInteger = (value: unknown) =>
  value === undefined || (Number.isSafeInteger(value) && (value as number) > 0);

/**
 * Throws {@link InvalidOptionsError} unless `baseUrl` is an http(s) URL, `apiKey` a non-empty
 * string and the numbers positive integers. `owner` names the class in the message.
 *
 * @example
 * ```ts
 * checkClientOptions({ baseUrl: process.env.HEFESTO_URL, apiKey: process.env.HEFESTO_KEY });
 * ```
 */
export const checkClientOptions = (options: CheckedOptions, owner = 'HefestoClient'): void => {
  const problems: string[] = [];
  const { baseUrl, apiKey } = options;
  if (baseUrl === undefined || baseUrl === '') {
    problems.push('baseUrl is required: the service URL, e.g. http://localhost:8787');
  } else if (typeof baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(baseUrl)) {
    problems.push(`baseUrl must be an http:// or https:// URL, got ${JSON.stringify(baseUrl)}`);
  } else {
    try {
      new URL(baseUrl);
    } catch {
      problems.push(`baseUrl is not a URL: ${JSON.stringify(baseUrl)}`);
    }
  }
  if (apiKey === undefined || apiKey === '') {
    problems.push(
      'apiKey is missing: pass the API key (`npm start` prints one on its first start; ' +
        'e.g. apiKey: process.env.HEFESTO_KEY with HEFESTO_KEY set)',
    );
  } else if (typeof apiKey !== 'string') {
    problems.push(`apiKey must be a string, got ${typeof apiKey}`);
  }
  for (const name of ['timeoutMs', 'maxValueBytes'] as const) {
    if (!positiveInteger(options[name])) {
      problems.push(`${name} must be a positive whole number, got ${String(options[name])}`);
    }
  }
  if (problems.length > 0) {
    throw new InvalidOptionsError(`${owner} options: ${problems.join('; ')}`);
  }
};
