import { spawnSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { outDir } from '../../scripts/build.mjs';
import { freePort } from '../../scripts/lib/server-process.js';
import { killTree, type Spawned, spawnCollected, waitHealthy } from './process-tools.js';

/**
 * The server, the CLI and the compaction command as they run for a user: built JavaScript
 * (scripts/build.mjs, dist/node), with no TypeScript loader and no sources, and rebuilt when
 * a source changes, so a build never goes stale silently.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROOT_KEY = 'root-key-for-built-dist-tests-0123456789';
const dirs: string[] = [];
const running: Spawned[] = [];

const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

afterEach(() => {
  for (const s of running.splice(0)) killTree(s.child.pid);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const node = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, args, {
    encoding: 'utf8',
    env: { ...process.env, HEFESTO_LOG_LEVEL: 'warn', ...env },
    timeout: 120_000,
  });

/**
 * A tree holding what a production install would (the lockfile's non-dev packages, linked
 * from this repository's node_modules) plus bin/, dist/node/ and package.json: no cli/,
 * shared/, functions/, and no tsx or esbuild to run TypeScript with.
 */
const productionTree = (): string => {
  const tree = tempDir('hefesto-prod-');
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
  };
  for (const [location, entry] of Object.entries(lock.packages)) {
    // Top-level packages only: nested ones come inside their parent's directory.
    if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(location) || entry.dev || entry.devOptional)
      continue;
    mkdirSync(dirname(join(tree, location)), { recursive: true });
    symlinkSync(join(ROOT, location), join(tree, location));
  }
  cpSync(join(ROOT, 'bin'), join(tree, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'scripts/build.mjs'), join(tree, 'scripts/build.mjs'));
  cpSync(join(ROOT, 'package.json'), join(tree, 'package.json'));
  cpSync(outDir(), join(tree, 'dist/node'), { recursive: true });
  return tree;
};

describe('the built server, CLI and compaction command', () => {
  it('run with neither tsx nor the TypeScript sources: --help, a start, an append, a compaction pass', async () => {
    const tree = productionTree();
    for (const absent of ['node_modules/tsx', 'node_modules/esbuild', 'cli', 'shared']) {
      expect(() => readFileSync(join(tree, absent, 'package.json'))).toThrow();
    }

    // npm ci's prepare script in such an install: nothing to build with, and no failure.
    const prepare = node([join(tree, 'scripts/build.mjs'), '--prepare']);
    expect(prepare.status).toBe(0);
    expect(prepare.stderr).toContain('[build] no esbuild (dev dependencies omitted)');

    const help = node([join(tree, 'bin/hefesto.mjs'), '--help']);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: hefesto COMMAND/);

    const data = tempDir('hefesto-prod-data-');
    const port = await freePort();
    const server = spawnCollected(process.execPath, [join(tree, 'dist/node/server.mjs')], {
      HEFESTO_DATA_DIR: data,
      HEFESTO_API_KEY: ROOT_KEY,
      HEFESTO_COMPACT_INTERVAL_MS: '0',
      PORT: `${port}`,
    });
    running.push(server);
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(url, server);
    // An append goes through the durable writer's worker thread and SQLite (both external
    // to the bundle, found from dist/node).
    const appended = await fetch(`${url}/v1/streams/run-1/events`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ROOT_KEY}`,
        'content-type': 'application/json',
        'idempotency-key': '"turn-1"',
      },
      body: JSON.stringify({ events: [{ type: 'observation', payload: { n: 1 } }] }),
    });
    expect(appended.status).toBe(201);
    expect(await appended.json()).toMatchObject({ firstSeq: 1, lastSeq: 1 });
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);

    // Through a symlink (a path as typed is not the module's real path): still runs the pass.
    const link = join(tempDir('hefesto-prod-link-'), 'tree');
    symlinkSync(tree, link);
    const pass = node([join(link, 'dist/node/compact.mjs')], {
      HEFESTO_DATA_DIR: data,
      HEFESTO_LOG_LEVEL: 'info',
    });
    expect(pass.stderr).toBe('');
    expect(pass.status).toBe(0);
    expect(JSON.parse(pass.stdout)).toMatchObject({
      msg: 'compaction run',
      compaction: { errors: 0 },
    });
  });

  it("load the store wiring on demand: the CLI's static imports hold no AWS SDK and no SQLite", () => {
    // `--help` (and every remote command) runs only what the CLI entry imports statically;
    // the AWS SDK and better-sqlite3 are most of a start-up (issue 22: --help under 300 ms),
    // so they must sit behind a dynamic import.
    const seen = new Set<string>();
    const externals = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(outDir(), file), 'utf8');
      // Static imports only: `import ... from "x"` and `import "x"`, not `import("x")`.
      for (const m of text.matchAll(
        /(?:^|[;\n}])\s*(?:import|export)\s[^;()]*?from\s*"([^"]+)"/g,
      )) {
        const spec = m[1] as string;
        if (spec.startsWith('./')) walk(spec.slice(2));
        else externals.add(spec);
      }
    };
    walk('cli.mjs');
    expect(seen.size).toBeGreaterThan(1);
    const heavy = [...externals].filter((s) => s.startsWith('@aws-sdk/') || s === 'better-sqlite3');
    expect(heavy).toEqual([]);
    // The walk does see externals: node built-ins at least.
    expect([...externals].some((s) => s.startsWith('node:'))).toBe(true);
  });

  it('are rebuilt before they run when a source is newer, so a change shows at once', () => {
    const tree = tempDir('hefesto-src-');
    for (const path of [
      'bin',
      'cli',
      'shared',
      'functions',
      'scripts/build.mjs',
      'scripts/compact.ts',
      'package.json',
      'package-lock.json',
    ]) {
      cpSync(join(ROOT, path), join(tree, path), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
    const bin = join(tree, 'bin/hefesto.mjs');

    const first = node([bin, '--help']);
    expect(first.status).toBe(0);
    expect(first.stderr).toContain('[build] not built yet: building dist/node');
    expect(first.stdout).toMatch(/^usage: hefesto COMMAND/);

    const again = node([bin, '--help']);
    expect(again.stderr).toBe('');
    expect(again.stdout).toBe(first.stdout);

    const main = join(tree, 'cli/main.ts');
    writeFileSync(
      main,
      readFileSync(main, 'utf8').replace('usage: hefesto COMMAND', 'usage: hefesto-edited COMMAND'),
    );
    const edited = node([bin, '--help']);
    expect(edited.status).toBe(0);
    expect(edited.stderr).toContain('[build] cli/main.ts changed: building dist/node');
    expect(edited.stdout).toMatch(/^usage: hefesto-edited COMMAND/);

    // A source that does not build stops the command: the last good build does not run.
    writeFileSync(main, `${readFileSync(main, 'utf8')}\nexport const broken = ;\n`);
    const broken = node([bin, '--help']);
    expect(broken.status).toBe(1);
    expect(broken.stderr).toContain('hefesto: cannot build the CLI');
    expect(broken.stdout).toBe('');
  });
});
