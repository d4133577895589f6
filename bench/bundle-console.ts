import { type BuildOptions, build } from 'esbuild';
import { esbuildOptions } from '../infra/bundling.js';

/**
 * What the console and the docs put into the API's Lambda bundle, from esbuild's metafile of
 * the deployed build (infra/bundling.ts): the serving code only (routes, the static file
 * reader, the docs page template), never the built console, Swagger UI or the libraries the
 * console bundles. Their files are read from `static/` on their first request
 * (shared/http/static-assets.ts), so a cold start loads none of them.
 */

/** Source files of the API bundle that exist for the console and the docs pages. */
export const CONSOLE_SERVING_FILES = [
  'shared/http/routes/console.ts',
  'shared/http/routes/docs.ts',
  'shared/http/docs-page.ts',
  'shared/http/static-assets.ts',
] as const;

/** Inputs that must never reach the API bundle: they are served as files, or browser-only. */
export const NOT_IN_API_BUNDLE = [
  'console/',
  'dist/static/',
  'node_modules/swagger-ui-dist/',
  'node_modules/jsondiffpatch/',
  'node_modules/playwright-core/',
  'node_modules/vite/',
] as const;

export interface ConsoleFootprint {
  /** Output bytes (minified) of each console/docs serving file in the bundle. */
  serving: Record<string, number>;
  /** Output bytes of the whole bundle. */
  total: number;
  /** Inputs under NOT_IN_API_BUNDLE that made it in (should be none). */
  leaked: string[];
}

export const consoleFootprint = async (
  options: Partial<BuildOptions> = {},
): Promise<ConsoleFootprint> => {
  const out = await build({
    ...esbuildOptions('api', 'api-bundle.js'),
    ...options,
    write: false,
    metafile: true,
  });
  const output = Object.values(out.metafile.outputs)[0];
  const inputs = output?.inputs ?? {};
  const serving: Record<string, number> = {};
  for (const file of CONSOLE_SERVING_FILES) serving[file] = inputs[file]?.bytesInOutput ?? 0;
  // node_modules may be a symlink: esbuild names its files by their real path.
  const leaked = Object.keys(out.metafile.inputs).filter((file) =>
    NOT_IN_API_BUNDLE.some((part) =>
      part.startsWith('node_modules/') ? file.includes(part) : file.startsWith(part),
    ),
  );
  return { serving, total: output?.bytes ?? 0, leaked };
};
