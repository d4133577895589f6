import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCompaction } from '../functions/wiring/run-compaction.js';
import { parseSettings } from '../shared/config/settings.js';
import { HefestoError } from '../shared/domain/errors.js';

/**
 * `node dist/node/compact.mjs` (this file built by scripts/build.mjs; from the sources,
 * `npx tsx scripts/compact.ts`): runs one compaction and retention pass now, with the same
 * settings as the server (environment), and prints its one log line. Exit status 0 when every
 * stream it visited was handled; 1 when one failed (logged, counted in `errors`) or the pass
 * could not run (a data directory that does not exist, or one a running server owns: then
 * `hefesto compact --key ...` asks that server to run the pass).
 */
export { runCompaction };

// argv[1] as typed (maybe through a symlink); import.meta.url is the real path.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const report = await runCompaction(parseSettings(process.env));
    process.exitCode = report.errors > 0 ? 1 : 0;
  } catch (err) {
    const code = err instanceof HefestoError ? `${err.code}: ` : '';
    process.stderr.write(
      `hefesto compact: ${code}${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exitCode = 1;
  }
}
