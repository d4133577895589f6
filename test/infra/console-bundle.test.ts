import { describe, expect, it } from 'vitest';
import { CONSOLE_SERVING_FILES, consoleFootprint } from '../../bench/bundle-console.js';

/**
 * The API's Lambda bundle holds the code that serves the console and the docs, never what it
 * serves (the built console, Swagger UI, the console's own libraries): those are files read
 * on their first request, so a cold start loads none of them.
 */

describe('the API bundle and the console', () => {
  it('holds the console and docs serving code only, and none of the served files', async () => {
    const footprint = await consoleFootprint();

    expect(footprint.leaked).toEqual([]);
    for (const file of CONSOLE_SERVING_FILES) expect(footprint.serving[file]).toBeGreaterThan(0);
    const serving = Object.values(footprint.serving).reduce((a, b) => a + b, 0);
    expect(serving).toBeLessThan(16 * 1024);
  });
});
