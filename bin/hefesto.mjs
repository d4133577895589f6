#!/usr/bin/env node
// The `hefesto` command (package.json "bin"): runs the CLI built as JavaScript into
// dist/node/cli.mjs (scripts/build.mjs; `npm ci` builds it), rebuilt first when a source is
// newer than the build. Usage: `npx hefesto --help`.
import { ensureBuilt } from '../scripts/build.mjs';

try {
  await ensureBuilt();
} catch (err) {
  // esbuild has printed what it could not build.
  process.stderr.write(`hefesto: cannot build the CLI: ${err.message}\n`);
  process.exit(1);
}
const { runCli } = await import('../dist/node/cli.mjs');

// A closed pipe (`hefesto events tail run-1 | head`) ends the command quietly.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

process.exitCode = await runCli(process.argv.slice(2), process.env);
