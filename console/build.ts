import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';

/**
 * `npm run build:console`: the static files the app serves, into dist/static/ (git-ignored;
 * a fresh clone has none, so `npm test` and `npm start` run this when they are missing):
 *
 *   console/  the console, built by Vite: index.html + assets/ with content-hashed names
 *   docs/     Swagger UI's bundle and stylesheet from the swagger-ui-dist package, our
 *             10-line init file, each renamed with a content hash, and manifest.json
 *
 * Every asset gets a `.gz` twin (gzip -9) so the servers never compress at request time.
 * Fails when the console's own assets pass CONSOLE_BUDGET_GZIP bytes gzipped.
 */

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '..');
export const STATIC_ROOT = join(ROOT, 'dist', 'static');
export const CONSOLE_BUDGET_GZIP = 300 * 1024;
const COMPRESSIBLE = /\.(js|css|html|svg|json)$/;

const contentHash = (bytes: Uint8Array) =>
  createHash('sha256').update(bytes).digest('hex').slice(0, 12);

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );

const buildConsole = async (outDir: string) => {
  await build({
    root: HERE,
    base: '/console/',
    configFile: false,
    logLevel: 'warn',
    build: {
      outDir,
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: false,
      // No data: URIs and no inline module-preload script: the CSP allows neither.
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      reportCompressedSize: false,
    },
  });
};

const copyDocs = (outDir: string) => {
  const lib = join(ROOT, 'node_modules', 'swagger-ui-dist');
  const { version } = JSON.parse(readFileSync(join(lib, 'package.json'), 'utf8')) as {
    version: string;
  };
  mkdirSync(outDir, { recursive: true });
  const put = (name: string, bytes: Uint8Array) => {
    const dot = name.lastIndexOf('.');
    const hashed = `${name.slice(0, dot)}.${contentHash(bytes)}${name.slice(dot)}`;
    writeFileSync(join(outDir, hashed), bytes);
    return hashed;
  };
  const manifest = {
    version,
    css: put('swagger-ui.css', readFileSync(join(lib, 'swagger-ui.css'))),
    bundle: put('swagger-ui-bundle.js', readFileSync(join(lib, 'swagger-ui-bundle.js'))),
    init: put('docs-init.js', readFileSync(join(HERE, 'docs-init.js'))),
  };
  writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
};

const gzipAll = (dir: string) => {
  for (const file of filesUnder(dir)) {
    if (COMPRESSIBLE.test(file))
      writeFileSync(`${file}.gz`, gzipSync(readFileSync(file), { level: 9 }));
  }
};

/** Gzipped bytes of the files under `dir` (their .gz twins). */
export const gzippedSize = (dir: string): number =>
  filesUnder(dir)
    .filter((f) => f.endsWith('.gz'))
    .reduce((n, f) => n + statSync(f).size, 0);

const main = async () => {
  const started = Date.now();
  rmSync(STATIC_ROOT, { recursive: true, force: true });
  await buildConsole(join(STATIC_ROOT, 'console'));
  copyDocs(join(STATIC_ROOT, 'docs'));
  gzipAll(STATIC_ROOT);
  const consoleGz = gzippedSize(join(STATIC_ROOT, 'console'));
  const docsGz = gzippedSize(join(STATIC_ROOT, 'docs'));
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  process.stdout.write(
    `[build:console] ${relative(ROOT, STATIC_ROOT)}: console ${kb(consoleGz)} gzipped ` +
      `(budget ${kb(CONSOLE_BUDGET_GZIP)}), docs library ${kb(docsGz)} gzipped, ` +
      `${Date.now() - started} ms\n`,
  );
  if (consoleGz > CONSOLE_BUDGET_GZIP) {
    throw new Error(`the console's assets are ${kb(consoleGz)} gzipped, over the budget`);
  }
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`build:console: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
