import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * What `npm ci` installs and runs, read from package.json and package-lock.json: no telemetry
 * script, the CDK libraries and tsx only as dev dependencies (a production install,
 * `npm ci --omit=dev`, brings none of them), and every install script reviewed.
 */

interface Manifest {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
  scarfSettings?: { enabled?: boolean };
  scripts: Record<string, string>;
}

interface LockEntry {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  hasInstallScript?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const root = (path: string) => new URL(`../../${path}`, import.meta.url);
const manifest = JSON.parse(readFileSync(root('package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(root('package-lock.json'), 'utf8')) as {
  packages: Record<string, LockEntry>;
};

/** The lockfile location a dependency `name` of the package at `from` resolves to (Node's walk up). */
const resolveIn = (from: string, name: string): string | undefined => {
  let dir = from;
  for (;;) {
    const candidate = `${dir === '' ? '' : `${dir}/`}node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (dir === '') return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at < 0 ? '' : dir.slice(0, at);
  }
};

/** Package names a production install brings: the closure of `dependencies` in the lockfile. */
const productionClosure = (): Set<string> => {
  const seen = new Set<string>();
  const names = new Set<string>();
  const visit = (location: string) => {
    if (seen.has(location)) return;
    seen.add(location);
    names.add(location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length));
    const entry = lock.packages[location];
    for (const dep of Object.keys({ ...entry?.dependencies, ...entry?.optionalDependencies })) {
      const found = resolveIn(location, dep);
      if (found) visit(found);
    }
  };
  for (const dep of Object.keys(manifest.dependencies)) {
    const found = resolveIn('', dep);
    if (!found) throw new Error(`${dep} is not in package-lock.json: regenerate it`);
    visit(found);
  }
  return names;
};

const DEV_ONLY = ['aws-cdk-lib', 'constructs', 'aws-cdk', 'tsx', 'esbuild', '@scarf/scarf'];

describe('the install', () => {
  describe('dependencies', () => {
    it('keeps the CDK libraries and tsx out of the production dependencies', () => {
      for (const name of DEV_ONLY.filter((n) => n !== '@scarf/scarf')) {
        expect(manifest.dependencies, name).not.toHaveProperty(name);
        expect(manifest.devDependencies, name).toHaveProperty(name);
      }
    });

    it('has a lockfile that agrees: a production install brings none of them', () => {
      const lockRoot = lock.packages[''] as LockEntry;
      expect(lockRoot.dependencies).toEqual(manifest.dependencies);
      const production = productionClosure();
      expect(production.has('better-sqlite3')).toBe(true);
      for (const name of DEV_ONLY) {
        expect(production.has(name), name).toBe(false);
        expect(lock.packages[`node_modules/${name}`]?.dev, name).toBe(true);
      }
    });
  });

  describe('install scripts', () => {
    it("runs no telemetry: @scarf/scarf's postinstall is denied, and switched off for npm versions that run it anyway", () => {
      expect(lock.packages['node_modules/@scarf/scarf']?.hasInstallScript).toBe(true);
      expect(manifest.allowScripts?.['@scarf/scarf']).toBe(false);
      expect(manifest.scarfSettings?.enabled).toBe(false);
    });

    it('reviews every dependency that has one: each is allowed or denied in allowScripts', () => {
      const unreviewed = Object.entries(lock.packages)
        .filter(([location, entry]) => location !== '' && entry.hasInstallScript)
        .map(([location]) => location.slice(location.lastIndexOf('node_modules/') + 13))
        .filter((name) => typeof manifest.allowScripts?.[name] !== 'boolean');
      expect(unreviewed).toEqual([]);
    });

    it('builds the server, the CLI and the compaction command as JavaScript on npm ci (prepare)', () => {
      expect(manifest.scripts.prepare).toBe('node scripts/build.mjs --prepare');
      expect(manifest.scripts.start).toMatch(/exec node dist\/node\/server\.mjs$/);
      expect(manifest.scripts.start).not.toContain('tsx');
    });
  });
});
