import type { OpenStores } from '../../functions/wiring/run-compaction.js';
import { DataDirInUseError, DataDirNotFoundError } from '../../shared/domain/errors.js';
import type { CompactionReport } from '../../shared/operator/compaction.js';
import { type Command, flagOption } from '../command.js';
import { CliError, type Context } from '../context.js';

/**
 * `hefesto compact`: one compaction and retention pass now; with --until-done, passes until
 * one reports `more: false` (one report line each; a pass that left work and did none stops
 * it, exit 1). Superseded objects are deleted by a later pass, once their grace has passed.
 *
 * 1. With --server: the server at --url runs it (`POST /v1/admin/compact`, operator key).
 * 2. Else on the stores the server settings name: S3 + DynamoDB with HEFESTO_BUCKET and
 *    HEFESTO_TABLE, else the embedded data directory HEFESTO_DATA_DIR (default ./.hefesto),
 *    which must exist (ErrDataDirNotFound; nothing is created).
 * 3. A data directory a running server owns: with a key, that server is asked as in 1 (the
 *    server at --url: the CLI cannot tell which URL the owner serves); without one,
 *    ErrDataDirInUse.
 */

/** A pass can take the server's whole run budget (HEFESTO_COMPACT_MAX_RUN_MS, up to 1 h). */
const SERVER_PASS_TIMEOUT_MS = 3_600_000 + 60_000;

const askServer = async (ctx: Context): Promise<CompactionReport> =>
  (
    await ctx
      .transport({ timeoutMs: SERVER_PASS_TIMEOUT_MS })
      // Repeatable: a pass is idempotent, so a lost reply may be retried.
      .call<CompactionReport>('POST', '/v1/admin/compact', { repeatable: true })
  ).body;

/**
 * The server's wiring (stores, settings, the compactor), loaded only when this command runs:
 * every other command starts without it.
 */
const wiring = async () => {
  const [
    { openCompactionStores, runCompaction, madeProgress, CompactionStuckError },
    { parseSettings },
  ] = await Promise.all([
    import('../../functions/wiring/run-compaction.js'),
    import('../../shared/config/settings.js'),
  ]);
  return { openCompactionStores, runCompaction, madeProgress, CompactionStuckError, parseSettings };
};

const openLocal = async (ctx: Context): Promise<OpenStores | 'ask-server'> => {
  const { openCompactionStores, parseSettings } = await wiring();
  const settings = parseSettings(ctx.env);
  try {
    return await openCompactionStores(settings);
  } catch (err) {
    if (err instanceof DataDirNotFoundError) {
      throw new CliError(
        'ErrDataDirNotFound',
        `${err.message}: set HEFESTO_DATA_DIR to the server's data directory (nothing was ` +
          'created), or pass --server to ask the server at --url',
      );
    }
    if (!(err instanceof DataDirInUseError)) throw err;
    if (ctx.settings.key === undefined || ctx.settings.key === '') {
      throw new CliError(
        'ErrDataDirInUse',
        `${err.message}, which compacts it on its own timer (HEFESTO_COMPACT_INTERVAL_MS): ` +
          'pass --key (or HEFESTO_KEY) with the operator key to have it run a pass now, or ' +
          'stop it to compact from here',
      );
    }
    ctx.stderr.write(`${err.message}: asking the server at ${ctx.settings.url} to compact\n`);
    return 'ask-server';
  }
};

/** --until-done over the server: POST /v1/admin/compact until a pass reports more: false. */
const askServerUntilDone = async (ctx: Context): Promise<CompactionReport> => {
  const { madeProgress, CompactionStuckError } = await wiring();
  for (let pass = 1; ; pass++) {
    const report = await askServer(ctx);
    if (!report.more) return report;
    await ctx.print(JSON.stringify(report));
    if (!madeProgress(report)) throw new CompactionStuckError(pass);
  }
};

export const compact: Command = {
  name: 'compact',
  usage: '[--server] [--until-done]',
  summary:
    'run one compaction and retention pass now (--until-done: passes until one reports ' +
    'more: false, a report line each), on the stores of the server settings ' +
    '(HEFESTO_DATA_DIR, which must exist, or HEFESTO_BUCKET + HEFESTO_TABLE); a data directory ' +
    'a running server owns, or --server, has the server at --url run it (operator key); ' +
    'prints its report line',
  args: [],
  options: { server: { type: 'boolean' }, 'until-done': { type: 'boolean' } },
  run: async (ctx, _args, values) => {
    const untilDone = flagOption(values, 'until-done');
    const local = flagOption(values, 'server') ? 'ask-server' : await openLocal(ctx);
    const lines: string[] = [];
    const { runCompaction, parseSettings, CompactionStuckError } = await wiring();
    let report: CompactionReport;
    try {
      report =
        local === 'ask-server'
          ? await (untilDone ? askServerUntilDone(ctx) : askServer(ctx))
          : await runCompaction(parseSettings(ctx.env), local, {
              untilDone,
              onPass: (r) => lines.push(JSON.stringify(r)),
            });
    } catch (err) {
      if (!(err instanceof CompactionStuckError)) throw err;
      for (const line of lines) await ctx.print(line);
      throw new CliError('ErrInternal', err.message);
    }
    for (const line of lines) await ctx.print(line);
    await ctx.print(JSON.stringify(report));
    return report.errors > 0 ? 1 : 0;
  },
};
