import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateDtsBundle } from 'dts-bundle-generator';
import { type BuildOptions, buildSync, transformSync } from 'esbuild';
import { buildEmbedded } from './pack-embedded.js';

/**
 * `npm run pack`: builds the installable packages and writes their tarballs,
 * `dist/packages/hefesto-client-<version>.tgz`, `dist/packages/hefesto-langgraph-<version>.tgz`
 * and `dist/packages/hefesto-openai-agents-<version>.tgz`.
 *
 * Per package, in order (client first: the langgraph and openai-agents builds resolve
 * `@hefesto/client` to the client's fresh .d.ts):
 *   1. `tsc -p packages/<name>/tsconfig.build.json`: per-file ES modules + .d.ts from the
 *      repository's sources into `dist/packages/build/<name>/esm` (a type error stops here).
 *      The client alone is bundled instead (`bundleClient`): its sources live in
 *      `shared/client` and `shared/domain`, and per-file output would publish that layout
 *      (`esm/packages/client/src/index.js`); it ships `esm/index.js`, `cjs/index.js` and one
 *      `index.d.ts` each (dts-bundle-generator), nothing of the repository's paths;
 *   2. each of those .js files transformed to CommonJS by esbuild into `.../cjs`, the .d.ts
 *      copied beside them, and `cjs/package.json` says `"type": "commonjs"` (so Node and
 *      TypeScript read that tree as CommonJS);
 *   3. `package.json` from the template `packages/<name>/package.json`, with the versions
 *      taken from the root package.json (the one place they are set):
 *        - `$version` in any string: the root's `version`;
 *        - a top-level field whose value is `$root` (e.g. `engines`): the root's field;
 *        - `$root` in a dependency range: the root's pinned version of that dependency;
 *      and the package's README.md;
 *   4. `npm pack --pack-destination dist/packages`.
 * Then `@hefesto/embedded` (`dist/packages/hefesto-embedded-<version>.tgz`): bundled, not
 * compiled per file (scripts/pack-embedded.ts), then steps 3 and 4 as above.
 * The build directory is removed first, so a source file no longer imported leaves the
 * package too. Prints the tarballs' paths, one a line.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BUILD = join(ROOT, 'dist/packages/build');
const OUT = join(ROOT, 'dist/packages');
const PACKAGES = ['client', 'langgraph', 'openai-agents'] as const;
const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies'] as const;

type Manifest = Record<string, unknown> & {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));

/** Step 3: the template with the root's versions filled in; throws on a version it lacks. */
export const stampManifest = (template: Record<string, unknown>, root: Manifest) => {
  const pinned = { ...root.devDependencies, ...root.dependencies };
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(template)) {
    if (value === '$root') {
      if (root[field] === undefined) throw new Error(`root package.json has no "${field}"`);
      out[field] = root[field];
    } else if ((DEPENDENCY_FIELDS as readonly string[]).includes(field)) {
      const ranges: Record<string, string> = {};
      for (const [name, range] of Object.entries(value as Record<string, string>)) {
        const version = pinned[name];
        if (range.includes('$root') && version === undefined)
          throw new Error(`root package.json does not pin ${name}`);
        ranges[name] = range
          .replaceAll('$version', root.version)
          .replaceAll('$root', version ?? '');
      }
      out[field] = ranges;
    } else {
      out[field] = JSON.parse(JSON.stringify(value).replaceAll('$version', root.version));
    }
  }
  return out;
};

/**
 * Dependencies that ship ES modules only (canonicalize 4.0.0 exports just an `import`
 * condition, so `require('canonicalize')` cannot resolve): a file importing one gets that
 * dependency bundled into its CommonJS form; everything else stays a require.
 */
const ESM_ONLY = /from ['"]canonicalize['"]/;

/** canonicalize as one CommonJS file, required by path from the files that import it. */
const vendorCanonicalize = (cjs: string): string => {
  const target = join(cjs, 'vendor', 'canonicalize.cjs');
  mkdirSync(dirname(target), { recursive: true });
  buildSync({
    stdin: { contents: "export { default } from 'canonicalize';", resolveDir: ROOT },
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    outfile: target,
  });
  return target;
};

/** Step 2: the CommonJS tree beside the ES one. */
const writeCommonJs = (esm: string, cjs: string) => {
  for (const file of filesUnder(esm)) {
    const target = join(cjs, relative(esm, file));
    mkdirSync(dirname(target), { recursive: true });
    if (file.endsWith('.d.ts')) {
      copyFileSync(file, target);
    } else if (file.endsWith('.js')) {
      const { code } = transformSync(readFileSync(file, 'utf8'), {
        format: 'cjs',
        platform: 'node',
        target: 'node20',
        sourcefile: relative(esm, file),
      });
      const vendored = ESM_ONLY.test(readFileSync(file, 'utf8'))
        ? code.replace(
            /require\("canonicalize"\)/,
            `require(${JSON.stringify(relative(dirname(target), vendorCanonicalize(cjs)).replace(/^(?!\.)/, './'))})`,
          )
        : code;
      writeFileSync(target, vendored);
    }
  }
  writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
};

/**
 * Step 1 and 2 for @hefesto/client: one ES module and one CommonJS file bundled from
 * packages/client/src/index.ts (its dependencies stay imports, but canonicalize, which ships
 * ES modules only, is bundled into the CommonJS file), and one declaration file bundled by
 * dts-bundle-generator (which type-checks the sources first: a type error stops here),
 * copied beside each.
 */
const bundleClient = (staged: string) => {
  const entry = join(ROOT, 'packages/client/src/index.ts');
  const common: BuildOptions = {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
  };
  buildSync({
    ...common,
    format: 'esm',
    packages: 'external',
    outfile: join(staged, 'esm/index.js'),
  });
  buildSync({
    ...common,
    format: 'cjs',
    external: ['fast-json-patch'],
    outfile: join(staged, 'cjs/index.js'),
  });
  writeFileSync(join(staged, 'cjs/package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
  const [types] = generateDtsBundle(
    [{ filePath: entry, output: { noBanner: true, exportReferencedTypes: false } }],
    { preferredConfigPath: join(ROOT, 'packages/client/tsconfig.build.json') },
  );
  if (!types) throw new Error('dts-bundle-generator wrote no declarations for the client');
  for (const tree of ['esm', 'cjs']) writeFileSync(join(staged, tree, 'index.d.ts'), types);
};

const buildPackage = (name: (typeof PACKAGES)[number], root: Manifest): string => {
  const source = join(ROOT, 'packages', name);
  const staged = join(BUILD, name);
  if (name === 'client') {
    bundleClient(staged);
  } else {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', join(source, 'tsconfig.build.json')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    writeCommonJs(join(staged, 'esm'), join(staged, 'cjs'));
  }
  const manifest = stampManifest(readJson(join(source, 'package.json')), root);
  writeFileSync(join(staged, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  copyFileSync(join(source, 'README.md'), join(staged, 'README.md'));
  const packed = execFileSync(
    'npm',
    ['pack', staged, '--pack-destination', OUT, '--json', '--ignore-scripts'],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [info] = JSON.parse(packed) as Array<{ filename: string }>;
  if (!info) throw new Error(`npm pack wrote nothing for ${name}`);
  return join(OUT, info.filename);
};

/** @hefesto/embedded: its tree from pack-embedded.ts, then steps 3 and 4. */
const packEmbedded = async (root: Manifest): Promise<string> => {
  const staged = join(BUILD, 'embedded');
  await buildEmbedded(staged);
  const template = readJson<Record<string, unknown>>(join(ROOT, 'packages/embedded/package.json'));
  writeFileSync(
    join(staged, 'package.json'),
    `${JSON.stringify(stampManifest(template, root), null, 2)}\n`,
  );
  const packed = execFileSync(
    'npm',
    ['pack', staged, '--pack-destination', OUT, '--json', '--ignore-scripts'],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [info] = JSON.parse(packed) as Array<{ filename: string }>;
  if (!info) throw new Error('npm pack wrote nothing for embedded');
  return join(OUT, info.filename);
};

const main = async () => {
  const root = readJson<Manifest>(join(ROOT, 'package.json'));
  rmSync(BUILD, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  for (const name of PACKAGES) process.stdout.write(`${buildPackage(name, root)}\n`);
  process.stdout.write(`${await packEmbedded(root)}\n`);
};

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
