import { vi } from 'vitest';

/**
 * The client's own suites that run against the embedded server (every one that takes its
 * server from `serverForSuite`), run again with the in-process engine as their server
 * (engine-suite.ts): the same tests, answered by the same app through the engine's transport.
 */

vi.mock('../support/server-suite.js', async () => ({
  serverForSuite: (await import('./engine-suite.js')).engineForSuite,
}));

await import('../client/client.test.js');
await import('../client/harness.test.js');
await import('../client/effects.test.js');
await import('../client/large-values-edges.test.js');
