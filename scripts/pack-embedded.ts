import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';
import { NODE_BUNDLE } from './build.mjs';

/**
 * `npm run pack`'s step for `@hefesto/embedded` (after @hefesto/client: its declarations
 * resolve `@hefesto/client` to the client's fresh .d.ts). The package holds the server, so it
 * is bundled like `npm run build`'s dist/node (scripts/build.mjs) rather than compiled per file:
 *   1. esbuild bundles the engine (packages/embedded/src/index.ts) and the server
 *      (functions/server.ts, the `hefesto-server` bin) into `dist/node/` with their shared
 *      chunks; external: better-sqlite3 (native, a dependency) and @hefesto/client (a
 *      dependency: the engine's client is that package's class, so HefestoSaver and
 *      `instanceof HefestoApiError` take it). A bundle that imports anything else from
 *      outside (an `@aws-sdk/*` module above all) stops the pack;
 *   2. the files those bundles load by path, at the paths they load them from (the same
 *      layout as the repository's dist/): the durable writer's thread beside the chunks,
 *      the console's and docs' assets in `dist/static/` (built first if stale);
 *   3. the declarations: tsc over the engine's entry, of which only the package's own .d.ts
 *      ship (`types/`); one importing anything but each other and @hefesto/client stops it;
 *   4. `bin/hefesto-server.mjs`, the manifest (stamped by the caller) and the README.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = join(ROOT, 'packages/embedded');

/** Imports the bundles may leave to the installed package's dependencies (and Node). */
const EXTERNAL = ['better-sqlite3', '@hefesto/client'];

/** Copied as they are into dist/node (plain JavaScript the bundles load by path). */
const COPIED = { 'durable-writer-thread.mjs': 'shared/adapters/local/durable-writer-thread.mjs' };

const bundle = async (out: string) => {
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: {
      engine: join(SOURCE, 'src/index.ts'),
      server: join(ROOT, 'functions/server.ts'),
    },
    outdir: out,
    ...NODE_BUNDLE,
    external: EXTERNAL,
  });
  const outside = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (imported.external && !isBuiltin(imported.path)) outside.add(imported.path);
    }
  }
  const unexpected = [...outside].filter((path) => !EXTERNAL.includes(path));
  if (unexpected.length > 0) {
    throw new Error(`the engine's bundles import ${unexpected.join(', ')}: not in the package`);
  }
  for (const [name, source] of Object.entries(COPIED)) {
    copyFileSync(join(ROOT, source), join(out, name));
  }
};

/**
 * Step 3: the package's own declarations, from index.d.ts along its imports (read by
 * TypeScript's preProcessFile, so a comment is not an import), checked to name nothing the
 * package does not ship.
 */
const declarations = (staged: string) => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(SOURCE, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  const emitted = join(ROOT, 'dist/packages/build/embedded-types/packages/embedded/src');
  const types = join(staged, 'types');
  mkdirSync(types, { recursive: true });
  const todo = ['index.d.ts'];
  const shipped = new Set<string>();
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (shipped.has(file)) continue;
    shipped.add(file);
    const path = join(emitted, file);
    if (!existsSync(path)) throw new Error(`types: ${file} was not emitted`);
    const text = readFileSync(path, 'utf8');
    for (const { fileName: spec } of ts.preProcessFile(text, true, true).importedFiles) {
      if (spec === '@hefesto/client') continue;
      if (!/^\.\/[a-z0-9-]+\.js$/.test(spec)) {
        throw new Error(`types/${file} imports ${spec}, which the package does not ship`);
      }
      todo.push(spec.slice(2).replace(/\.js$/, '.d.ts'));
    }
    writeFileSync(join(types, file), text);
  }
};

/** Builds the package's tree in `staged` (the caller writes package.json and packs it). */
export const buildEmbedded = async (staged: string): Promise<void> => {
  const built = spawnConsoleBuild();
  await bundle(join(staged, 'dist/node'));
  if (!built) throw new Error('console/ensure-built.sh failed: no console assets to ship');
  cpSync(join(ROOT, 'dist/static'), join(staged, 'dist/static'), { recursive: true });
  declarations(staged);
  mkdirSync(join(staged, 'bin'), { recursive: true });
  writeFileSync(
    join(staged, 'bin/hefesto-server.mjs'),
    "#!/usr/bin/env node\n// `npx hefesto-server`: the embedded server (what `npm start` runs).\nimport '../dist/node/server.mjs';\n",
    { mode: 0o755 },
  );
  copyFileSync(join(SOURCE, 'README.md'), join(staged, 'README.md'));
};

/** The console's and docs' assets, as `npm start` builds them (when missing or stale). */
const spawnConsoleBuild = (): boolean => {
  try {
    execFileSync('bash', [join(ROOT, 'console/ensure-built.sh')], { cwd: ROOT, stdio: 'inherit' });
  } catch {
    return false;
  }
  return existsSync(join(ROOT, 'dist/static/console'));
};
