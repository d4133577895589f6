import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/support/isolated-trust-file.ts', 'test/support/aws-storage.ts'],
    globalSetup: ['test/support/build-dist.ts'],
  },
});
