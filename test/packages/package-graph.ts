import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { build } from 'esbuild';

/**
 * What an installed package brings with it, read from a project's node_modules: the modules
 * Node loads from its entries, its files, and its dependency tree. Used by
 * test/packages/install.test.ts to keep server code and server dependencies out.
 */

/** Modules no installable package may load or depend on: they belong to the server. */
export const SERVER_MODULES = [
  'aws-cdk-lib',
  'constructs',
  'better-sqlite3',
  'hono',
  '@hono/',
  '@aws-sdk/',
  'pino',
  'zod',
  'tsx',
] as const;

/** Whether a file path (`node_modules/hono/...`) or an import (`hono`, `zod/v4`) is one. */
export const isServerModule = (pathOrName: string): boolean => {
  const p = pathOrName.split(sep).join('/');
  return SERVER_MODULES.some((m) => {
    const scope = m.endsWith('/');
    const bare = scope ? p.startsWith(m) : p === m || p.startsWith(`${m}/`);
    return bare || p.includes(`node_modules/${m}${scope ? '' : '/'}`);
  });
};

export interface ImportGraph {
  /** Every file loaded, relative to the project (e.g. `node_modules/canonicalize/lib/...`). */
  files: string[];
  /** Imports left to Node: builtins and the `external` patterns. */
  external: string[];
}

/**
 * The import graph of `specifiers` as Node resolves them from `project` (through each
 * package's `exports`, with the `import` or `require` condition), read from esbuild's
 * metafile: esbuild parses every file, so no import is missed by a regex.
 */
export const importGraph = async (
  project: string,
  specifiers: string[],
  format: 'esm' | 'cjs',
  external: string[] = [],
): Promise<ImportGraph> => {
  const entry = join(project, format === 'esm' ? 'graph-entry.mjs' : 'graph-entry.cjs');
  const lines = specifiers.map((s) =>
    format === 'esm' ? `import ${JSON.stringify(s)};` : `require(${JSON.stringify(s)});`,
  );
  writeFileSync(entry, `${lines.join('\n')}\n`);
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: project,
    bundle: true,
    write: false,
    platform: 'node',
    format,
    external,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.entries(result.metafile.inputs);
  return {
    files: inputs.map(([path]) => path).filter((p) => p !== relative(project, entry)),
    external: [
      ...new Set(inputs.flatMap(([, i]) => i.imports.filter((x) => x.external).map((x) => x.path))),
    ],
  };
};

/** The files of an installed package, relative to its directory, with `/` separators. */
export const packageFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** Where Node finds `name` from `dir`: the nearest node_modules up the tree. */
const locate = (dir: string, name: string, project: string): string => {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (d === project || d === dirname(d)) throw new Error(`${name} is not installed for ${dir}`);
  }
};

/**
 * Every package reachable from `roots` through `dependencies` and `optionalDependencies`
 * (peer dependencies are the user's own stack, e.g. LangChain, and are not followed).
 */
export const dependencyTree = (project: string, roots: string[]): string[] => {
  const seen = new Set<string>();
  const visit = (dir: string) => {
    const manifest = readManifest(dir);
    if (seen.has(manifest.name)) return;
    seen.add(manifest.name);
    const deps = { ...manifest.dependencies, ...manifest.optionalDependencies };
    for (const name of Object.keys(deps)) visit(locate(dir, name, project));
  };
  for (const root of roots) visit(join(project, 'node_modules', root));
  return [...seen].sort();
};
