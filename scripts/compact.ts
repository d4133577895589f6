import { fileURLToPath } from 'node:url';
import { runCompaction } from '../functions/wiring/run-compaction.js';
import { parseSettings } from '../shared/config/settings.js';

/**
 * `npx tsx scripts/compact.ts`: runs one compaction and retention pass now, with the same
 * settings as the server (environment), and prints its one log line. Exit status 0 when every
 * stream it visited was handled; 1 when one failed (logged, counted in `errors`) or the pass
 * could not run.
 */
export { runCompaction };

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const report = await runCompaction(parseSettings(process.env));
    process.exitCode = report.errors > 0 ? 1 : 0;
  } catch (err) {
    process.stderr.write(`hefesto compact: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
