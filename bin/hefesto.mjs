#!/usr/bin/env node
// The `hefesto` command (package.json "bin"): loads tsx so the CLI runs from its TypeScript
// sources, then runs it. Usage: `npx hefesto --help`.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../cli/main.ts');

// A closed pipe (`hefesto events tail run-1 | head`) ends the command quietly.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

process.exitCode = await runCli(process.argv.slice(2), process.env);
