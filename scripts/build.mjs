// `npm run build` (and `npm ci`, through the `prepare` script, which builds the console's
// assets too): the embedded server, the CLI and the compaction command as JavaScript, bundled
// by esbuild into dist/node/ (git-ignored), so they start without a TypeScript loader:
//
//   dist/node/server.mjs   `npm start` (functions/server.ts)
//   dist/node/cli.mjs      the `hefesto` command (cli/main.ts; bin/hefesto.mjs runs it)
//   dist/node/compact.mjs  one compaction pass from the shell (scripts/compact.ts)
//   dist/node/*-HASH.mjs   code the entries share or load on demand (a command's AWS client,
//                          the server wiring behind `hefesto compact`): `--help` loads neither
//   dist/node/durable-writer-thread.mjs  the durable writer's worker (plain JS, copied)
//
// Plain JavaScript, so it runs on a bare `node` (no tsx): bin/hefesto.mjs imports
// `ensureBuilt` from here. esbuild itself is loaded only when a build is due.
//
// Kept external (loaded from node_modules at run time): better-sqlite3 (native) and the AWS
// SDK (large; only the code paths that talk to AWS load it). Everything else is bundled: one
// file parsed instead of hundreds resolved.
//
// Every file sits directly in dist/node/, two levels below the repository like the sources
// that locate files with `import.meta.url`: functions/wiring/embedded.ts finds
// `../../dist/static` (the console) and shared/adapters/local/durable-writer.ts its worker
// beside itself; both resolve the same from dist/node/.
//
// Not stale silently: `ensureBuilt` rebuilds when any source (cli/, shared/, functions/,
// scripts/compact.ts, this file, package.json, package-lock.json) is newer than the stamp,
// dist/node/BUILD.json. `npm start`, bin/hefesto.mjs and the test setup call it; when the
// build is fresh that is one stat per source file (~200, a few ms).
//
// Safe to run twice at once (two test workers, a CLI while `npm start` builds): each build
// writes into a directory of its own, then renames its files into dist/node/ one by one,
// shared chunks first, entries next, the stamp last, so a reader sees an entry only once the
// chunks it imports are there.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The built entries, by output name (dist/node/NAME.mjs), and their sources. */
export const ENTRIES = {
  server: 'functions/server.ts',
  cli: 'cli/main.ts',
  compact: 'scripts/compact.ts',
};

/** What a build reads: a change to any file under these makes dist/node stale. */
const SOURCES = [
  'cli',
  'shared',
  'functions',
  'scripts/compact.ts',
  'scripts/build.mjs',
  'package.json',
  'package-lock.json',
];

/** Files copied as they are (plain JavaScript the bundles load by path). */
const COPIED = { 'durable-writer-thread.mjs': 'shared/adapters/local/durable-writer-thread.mjs' };

const EXTERNAL = ['better-sqlite3', '@aws-sdk/*'];

/**
 * How the server's JavaScript is bundled: split ES modules for Node 20, with a metafile. Also
 * what scripts/pack-embedded.ts bundles @hefesto/embedded with (its own entries and externals).
 */
export const NODE_BUNDLE = {
  outExtension: { '.js': '.mjs' },
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: /** @type {const} */ ('esm'),
  platform: /** @type {const} */ ('node'),
  target: 'node20',
  // The bundled CommonJS packages (pino) `require` Node's modules: an ES module has no
  // `require` of its own.
  banner: {
    js: "import { createRequire as __hefestoRequire } from 'node:module'; const require = __hefestoRequire(import.meta.url);",
  },
  legalComments: /** @type {const} */ ('none'),
  logLevel: /** @type {const} */ ('warning'),
  metafile: true,
};

/** Chunks of earlier builds are removed once this old (a running process may still load one). */
const OLD_CHUNK_MS = 10 * 60_000;

export const outDir = (root = REPO_ROOT) => join(root, 'dist', 'node');
const stampPath = (root) => join(outDir(root), 'BUILD.json');

/** The newest modification time (ms) of the build's sources under `root`, and that file. */
const newestSource = (root) => {
  let newest = { mtimeMs: 0, path: '' };
  const visit = (path) => {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      return; // a source that is not there (an install without sources) changes nothing
    }
    if (stat.isDirectory()) {
      for (const name of readdirSync(path)) visit(join(path, name));
    } else if (stat.mtimeMs > newest.mtimeMs) {
      newest = { mtimeMs: stat.mtimeMs, path };
    }
  };
  for (const source of SOURCES) visit(join(root, source));
  return newest;
};

/**
 * Why dist/node under `root` needs a build, or undefined when it is up to date: no build yet,
 * an entry missing, or a source newer than the last build.
 */
export const staleReason = (root = REPO_ROOT) => {
  let stamp;
  try {
    stamp = statSync(stampPath(root));
  } catch {
    return 'not built yet';
  }
  for (const name of [...Object.keys(ENTRIES), ...Object.keys(COPIED)]) {
    const file = name.endsWith('.mjs') ? name : `${name}.mjs`;
    if (!existsSync(join(outDir(root), file))) return `dist/node/${file} is missing`;
  }
  const newest = newestSource(root);
  if (newest.mtimeMs > stamp.mtimeMs) return `${relative(root, newest.path)} changed`;
  return undefined;
};

/** Builds dist/node under `root` (see the top of this file). Resolves with its file names. */
export const build = async (root = REPO_ROOT) => {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch (err) {
    throw new Error(
      'cannot build dist/node: esbuild is not installed (a dev dependency: run npm ci ' +
        'without --omit=dev, then npm run build)',
      { cause: err },
    );
  }
  const out = outDir(root);
  mkdirSync(out, { recursive: true });
  // A source saved while this build reads them must leave it stale: the stamp gets the time
  // the build started.
  const started = new Date();
  const tmp = join(out, `.tmp-${process.pid}-${started.getTime()}`);
  try {
    const { metafile } = await esbuild.build({
      absWorkingDir: root,
      entryPoints: Object.fromEntries(
        Object.entries(ENTRIES).map(([name, source]) => [name, join(root, source)]),
      ),
      outdir: tmp,
      ...NODE_BUNDLE,
      external: EXTERNAL,
    });
    // A source the staleness check does not watch would let the build go stale silently.
    const unwatched = Object.keys(metafile.inputs).filter(
      (input) =>
        !input.includes('node_modules/') &&
        !SOURCES.some((source) => input === source || input.startsWith(`${source}/`)),
    );
    if (unwatched.length > 0) {
      throw new Error(
        `the build reads ${unwatched.join(', ')}, which scripts/build.mjs's SOURCES do not ` +
          'list: add them there',
      );
    }
    for (const [name, source] of Object.entries(COPIED)) {
      writeFileSync(join(tmp, name), readFileSync(join(root, source)));
    }
    const files = readdirSync(tmp);
    const entries = new Set(Object.keys(ENTRIES).map((name) => `${name}.mjs`));
    const ordered = [
      ...files.filter((f) => !entries.has(f)),
      ...files.filter((f) => entries.has(f)),
    ];
    for (const file of ordered) renameSync(join(tmp, file), join(out, file));
    const now = Date.now();
    // Chunks of earlier builds, and the directories of builds that were killed.
    for (const file of readdirSync(out)) {
      const path = join(out, file);
      if (files.includes(file) || !/(-[A-Z0-9]{8}\.mjs|^\.tmp-.*)$/.test(file)) continue;
      if (now - statSync(path).mtimeMs > OLD_CHUNK_MS)
        rmSync(path, { recursive: true, force: true });
    }
    writeFileSync(
      stampPath(root),
      `${JSON.stringify({ builtAt: started.toISOString(), files: ordered }, null, 2)}\n`,
    );
    utimesSync(stampPath(root), started, started);
    return ordered;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
};

/**
 * Builds dist/node under `root` when it is stale (see `staleReason`), saying so on stderr.
 * Resolves with whether it built.
 */
export const ensureBuilt = async (root = REPO_ROOT) => {
  const reason = staleReason(root);
  if (reason === undefined) return false;
  process.stderr.write(`[build] ${reason}: building dist/node (scripts/build.mjs)\n`);
  await build(root);
  return true;
};

/** Whether the dev dependencies that build (esbuild, and Vite for the console) are installed. */
const canBuild = async () => {
  try {
    await import('esbuild');
    return true;
  } catch {
    return false;
  }
};

/**
 * `npm ci`'s prepare script: dist/node and the console's assets (console/ensure-built.sh).
 * A production install (`npm ci --omit=dev`) has no esbuild or Vite: it says so and builds
 * nothing, so the install still succeeds (such an install needs dist/ built elsewhere).
 */
const prepare = async () => {
  if (!(await canBuild())) {
    process.stderr.write(
      '[build] no esbuild (dev dependencies omitted): dist/node and the console are not ' +
        'built; build them where dev dependencies are installed (npm run build, npm run ' +
        'build:console)\n',
    );
    return;
  }
  await build();
  // Loaded here: bin/hefesto.mjs imports this file on every command.
  const { spawnSync } = await import('node:child_process');
  const consoleBuild = spawnSync('bash', [join(REPO_ROOT, 'console/ensure-built.sh')], {
    stdio: 'inherit',
  });
  if (consoleBuild.status !== 0) throw new Error('console/ensure-built.sh failed');
};

// `node scripts/build.mjs`: build now; `--if-stale`: only when stale; `--prepare`: see above.
// (argv[1] as typed, maybe through a symlink; import.meta.url is the real path.)
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    if (process.argv.includes('--if-stale')) await ensureBuilt();
    else if (process.argv.includes('--prepare')) await prepare();
    else await build();
  } catch (err) {
    process.stderr.write(`[build] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
