import { HefestoClient, InvalidOptionsError } from '@hefesto/client';
import { describe, expect, it } from 'vitest';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';

/**
 * The saver checks baseUrl and apiKey when it is built, unless it is given a client: a missing
 * one is an InvalidOptionsError naming it (it was 2 s of retries ending in ErrUnavailable at
 * the first call).
 */

describe('HefestoSaver options', () => {
  it('refuses a missing baseUrl or apiKey at construction, saying a client would do too', () => {
    expect(() => new HefestoSaver({})).toThrow(InvalidOptionsError);
    expect(() => new HefestoSaver({ apiKey: 'k' })).toThrow(
      /HefestoSaver \(or pass `client`\) options: baseUrl is required/,
    );
    expect(() => new HefestoSaver({ baseUrl: 'http://localhost:8787' })).toThrow(
      /apiKey is missing/,
    );
  });

  it('needs neither with a client of its own', () => {
    const client = new HefestoClient({ baseUrl: 'http://localhost:8787', apiKey: 'k' });
    expect(new HefestoSaver({ client }).client).toBe(client);
  });
});
