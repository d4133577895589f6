import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_FILE, esbuildOptions, REPO_ROOT } from '../infra/bundling.js';
import { coldStart } from './bundle.js';
import { printTable } from './harness.js';

/**
 * The API bundle of this tree against the one of another commit (e.g. the commit before the
 * console): each built with its own tree's infra/bundling.ts, then cold-started alternately
 * (fresh `node`, load + one GET /healthz), so a busy moment of the machine hits both alike.
 *
 *   npx tsx bench/bundle-compare.ts <git ref> [runs]
 */

const [ref, runsArg] = process.argv.slice(2);
if (!ref) throw new Error('usage: npx tsx bench/bundle-compare.ts <git ref> [runs]');
const RUNS = Number(runsArg ?? 15);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

const dir = mkdtempSync(join(tmpdir(), 'hefesto-bundle-compare-'));
try {
  // The other commit's tree, with this checkout's node_modules.
  const tree = join(dir, 'tree');
  mkdirSync(tree);
  execFileSync('bash', ['-c', `git -C "${REPO_ROOT}" archive "${ref}" | tar -x -C "${tree}"`]);
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(tree, 'node_modules'));
  const theirs = (await import(pathToFileURL(join(tree, 'infra/bundling.ts')).href)) as {
    esbuildOptions: typeof esbuildOptions;
  };
  const bundles = {
    [ref]: join(dir, 'before', BUNDLE_FILE),
    'this tree': join(dir, 'after', BUNDLE_FILE),
  };
  await build(theirs.esbuildOptions('api', bundles[ref] as string));
  await build(esbuildOptions('api', bundles['this tree']));
  const times = new Map<string, number[]>(Object.keys(bundles).map((k) => [k, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const [name, file] of Object.entries(bundles)) {
      const run = coldStart(file);
      if (run.status !== 200) throw new Error(`${name}: /healthz answered ${run.status}`);
      times.get(name)?.push(run.loadMs + run.firstMs);
    }
  }
  printTable(
    `API bundle and cold-start proxy, ${ref} vs this tree (${RUNS} alternating fresh processes)`,
    Object.entries(bundles).map(([name, file]) => ({
      tree: name,
      size: `${(statSync(file).size / 1024).toFixed(1)} KB`,
      'load + first request (median)': `${median(times.get(name) ?? []).toFixed(0)} ms`,
      min: `${Math.min(...(times.get(name) ?? [])).toFixed(0)} ms`,
    })),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
