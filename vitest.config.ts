import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

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
    setupFiles: ['test/support/isolated-trust-file.ts'],
    globalSetup: ['test/support/build-dist.ts'],
  },
});
