import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * LangGraph's checkpoint validation suite (1.1.1) calls describe/it/expect as globals, so it
 * runs under a config of its own with `globals: true`. `@hefesto/client` resolves to the
 * client package's source entry, as the package build resolves it to the built client.
 */
export default defineConfig({
  resolve: {
    alias: {
      '@hefesto/client': fileURLToPath(
        new URL('../../packages/client/src/index.ts', import.meta.url),
      ),
    },
  },
  test: {
    globals: true,
    include: ['test/langgraph/**/*.spec.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    setupFiles: ['test/support/isolated-trust-file.ts'],
    globalSetup: ['test/support/build-dist.ts'],
  },
});
