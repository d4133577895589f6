import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * How the Lambda functions are built: one place, read by the stack (NodejsFunction runs the
 * esbuild CLI with these options, locally, never in Docker) and by `npm run bench` (the
 * esbuild API with the same options), so the bench measures what is deployed.
 *
 * Decisions:
 * - Node.js 24 (`nodejs24.x`): the newest Lambda runtime and Node LTS, supported the longest.
 * - arm64 (Graviton): about 20% cheaper per GB-second than x86_64; the bundle is plain JS.
 * - CommonJS output: `@aws-sdk/*` stays external (the runtime provides it), and `require`
 *   loads its single-file CommonJS builds; an ES module bundle `import`s the SDK's ES build
 *   instead, hundreds of small files: its cold start measured ~1.4x slower here.
 * - `@aws-sdk/*` external keeps the API bundle under 1 MB (~665 KB; with the SDK bundled in,
 *   ~1.1 MB, and a cold start 10-25% faster in `npm run bench`, which measures both). The
 *   runtime's SDK is far newer than the S3 conditional writes the adapters need
 *   (If-None-Match / If-Match on PutObject, in the SDK since 2024); AWS updates it.
 * - Minified, no source maps: smaller, faster to load; error codes in the request log
 *   identify failures without stack traces.
 */

export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The Lambda entry points (each exports `handler`). */
export const FUNCTION_ENTRIES = {
  api: 'functions/api.ts',
  compactor: 'functions/compactor.ts',
} as const;
export type FunctionName = keyof typeof FUNCTION_ENTRIES;

export const entryPath = (name: FunctionName): string => join(REPO_ROOT, FUNCTION_ENTRIES[name]);

export const LAMBDA_RUNTIME = Runtime.NODEJS_24_X;
export const LAMBDA_ARCHITECTURE = Architecture.ARM_64;

/** Modules that must never reach a Lambda bundle (native, used by the embedded server only). */
export const FORBIDDEN_IN_BUNDLE = ['better-sqlite3'] as const;

export const BUNDLE = {
  format: 'cjs',
  target: 'node24',
  minify: true,
  sourcemap: false,
  mainFields: ['module', 'main'],
  external: ['@aws-sdk/*'],
} as const;

/** The file NodejsFunction writes for a CommonJS bundle; the handler is `index.handler`. */
export const BUNDLE_FILE = 'index.js';

/** NodejsFunction bundling options: local esbuild from node_modules, never Docker. */
export const cdkBundling = (): BundlingOptions => ({
  forceDockerBundling: false,
  format: OutputFormat.CJS,
  target: BUNDLE.target,
  minify: BUNDLE.minify,
  sourceMap: BUNDLE.sourcemap,
  mainFields: [...BUNDLE.mainFields],
  externalModules: [...BUNDLE.external],
  // The console's and the docs' built files beside the handler (functions/api.ts reads them
  // on first request, never at cold start); absent when `npm run build:console` did not run.
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir: string, outputDir: string) => [
      `if [ -d "${inputDir}/dist/static" ]; then cp -R "${inputDir}/dist/static" "${outputDir}/static"; fi`,
    ],
  },
});

/** The same build through the esbuild API (for the bench): one entry, one output file. */
export const esbuildOptions = (name: FunctionName, outfile: string): BuildOptions => ({
  entryPoints: [entryPath(name)],
  outfile,
  bundle: true,
  platform: 'node',
  format: BUNDLE.format,
  target: BUNDLE.target,
  minify: BUNDLE.minify,
  sourcemap: BUNDLE.sourcemap,
  mainFields: [...BUNDLE.mainFields],
  external: [...BUNDLE.external],
  absWorkingDir: REPO_ROOT,
  logLevel: 'error',
});
