import { runCompaction } from '../../functions/wiring/run-compaction.js';
import { parseSettings } from '../../shared/config/settings.js';
import type { Command } from '../command.js';

/**
 * `hefesto compact`: one compaction and retention pass now, on the stores the server
 * settings name (S3 + DynamoDB with HEFESTO_BUCKET and HEFESTO_TABLE, else the embedded data
 * directory HEFESTO_DATA_DIR, which a running server owns and compacts on its own timer).
 */
export const compact: Command = {
  name: 'compact',
  usage: '',
  summary:
    'run one compaction and retention pass now on the stores of the server settings (HEFESTO_DATA_DIR, or HEFESTO_BUCKET + HEFESTO_TABLE); prints its report line',
  args: [],
  options: {},
  run: async (ctx) => {
    const report = await runCompaction(parseSettings(process.env));
    await ctx.print(JSON.stringify(report));
    return report.errors > 0 ? 1 : 0;
  },
};
