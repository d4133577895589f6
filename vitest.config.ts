import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Test files run side by side in this many worker processes (HEFESTO_TEST_WORKERS overrides).
 * Vitest's default is one fewer than the cores, which on our 2-core machines is a single
 * worker; most test time is spent waiting (on the emulators, on fsync, on spawned servers), so
 * two workers overlap those waits. On more cores this is vitest's default.
 */
const workers = Number(process.env.HEFESTO_TEST_WORKERS) || Math.max(2, availableParallelism() - 1);

export default defineConfig({
  // The packages' sources import the client by its package name (packages/embedded,
  // packages/openai-agents): its source entry here, as tsconfig.json's paths say; the built
  // package in the tarball.
  resolve: {
    alias: {
      '@hefesto/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: workers,
    setupFiles: [
      'test/support/isolated-trust-file.ts',
      'test/support/aws-storage.ts',
      'test/support/fast-check-seed.ts',
    ],
    globalSetup: ['test/support/build-dist.ts'],
  },
});
