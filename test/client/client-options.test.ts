import { describe, expect, it } from 'vitest';
import {
  HefestoClient,
  type HefestoClientOptions,
  InvalidOptionsError,
} from '../../packages/client/src/index.js';

/**
 * Options are checked when a client is built: a missing `baseUrl` or `apiKey` is an
 * InvalidOptionsError naming it, at once and before any request (it was a TypeError from
 * fetch). The saver's: test/langgraph/saver-options.spec.ts.
 */

const fetchNever = (() => {
  throw new Error('no request may be sent');
}) as unknown as typeof fetch;

const build = (options: Partial<HefestoClientOptions>) => () =>
  new HefestoClient({ fetch: fetchNever, ...options } as HefestoClientOptions);

describe('HefestoClient options', () => {
  it('refuses a missing baseUrl and apiKey, naming both', () => {
    expect(build({})).toThrow(InvalidOptionsError);
    expect(build({})).toThrow(/HefestoClient options: baseUrl is required.*apiKey is missing/);
  });

  it('refuses a baseUrl that is not an http(s) URL', () => {
    for (const baseUrl of ['localhost:8787', 'ftp://x', '/v1', 'http://']) {
      expect(build({ baseUrl, apiKey: 'k' }), baseUrl).toThrow(/baseUrl must be an http/);
    }
  });

  it('refuses a missing key with the hint to set one, as process.env gives it', () => {
    const { HEFESTO_KEY: _, ...env } = process.env;
    const err = (() => {
      try {
        build({ baseUrl: 'http://localhost:8787', apiKey: env.HEFESTO_KEY })();
      } catch (e) {
        return e;
      }
    })();

    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect((err as InvalidOptionsError).code).toBe('ErrInvalidInput');
    expect((err as Error).message).toMatch(/apiKey is missing.*HEFESTO_KEY/);
  });

  it('refuses a timeout or value limit that is not a positive whole number', () => {
    const base = { baseUrl: 'http://localhost:8787', apiKey: 'k' };
    expect(build({ ...base, timeoutMs: 0 })).toThrow(/timeoutMs must be a positive/);
    expect(build({ ...base, maxValueBytes: 1.5 })).toThrow(/maxValueBytes must be a positive/);
  });

  it('builds from good options without sending anything', () => {
    expect(build({ baseUrl: 'https://api.example.com/prod/', apiKey: 'k' })).not.toThrow();
  });
});
