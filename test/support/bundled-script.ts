import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../scripts/build.mjs';

/**
 * A TypeScript script for a child process, bundled once into plain JavaScript (esbuild, as
 * scripts/build.mjs bundles the server) so each spawn is a bare `node FILE`: `node --import tsx`
 * compiles the script's whole import graph again at every start, about a second of CPU on our
 * machines. `source` imports by paths relative to the repository root; give the child what
 * changes from one spawn to the next in its environment, so one bundle serves every spawn.
 * Bundles go to a temporary directory, removed when the test process exits, with the durable
 * writer's worker beside them (where the local stores look for it) and a link to the
 * repository's node_modules (for the packages left outside the bundle: better-sqlite3, the SDK).
 * Call `removeBundledScripts` after the file's tests (vitest ends its workers without 'exit').
 */
const bundles = new Map<string, Promise<string>>();
let dir: string | undefined;

export const bundledScript = (source: string): Promise<string> => {
  let bundle = bundles.get(source);
  if (!bundle) {
    bundle = bundle_(source, bundles.size);
    bundles.set(source, bundle);
  }
  return bundle;
};

const bundle_ = async (source: string, n: number): Promise<string> => {
  if (!dir) {
    const made = mkdtempSync(join(tmpdir(), 'hefesto-test-script-'));
    dir = made;
    process.once('exit', removeBundledScripts);
    copyFileSync(
      join(REPO_ROOT, 'shared/adapters/local/durable-writer-thread.mjs'),
      join(made, 'durable-writer-thread.mjs'),
    );
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(made, 'node_modules'), 'dir');
  }
  const outfile = join(dir, `script-${n}.mjs`);
  await build({
    stdin: { contents: source, resolveDir: REPO_ROOT, loader: 'ts', sourcefile: 'script.ts' },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: ['better-sqlite3', '@aws-sdk/*'],
    banner: {
      js: "import { createRequire as __hefestoRequire } from 'node:module'; const require = __hefestoRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  return outfile;
};

/** Removes the bundles and their directory (the link to node_modules is unlinked, not followed). */
export const removeBundledScripts = (): void => {
  if (!dir) return;
  rmSync(join(dir, 'node_modules'), { force: true });
  rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  bundles.clear();
};
