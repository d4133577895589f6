import type { LedgerEvent } from '../../shared/client/types.js';
import type { Command } from '../command.js';
import type { Context } from '../context.js';
import { EXPORT_FORMAT, ExportReader, type FileCheck } from '../export-format.js';
import { openLines } from '../files.js';
import { Progress } from '../progress.js';

export interface CheckOptions {
  /** Progress label. */
  label: string;
  /** Called with each event while the file is good so far. */
  onEvent?: (event: LedgerEvent) => Promise<void>;
  /** Called once the whole file checked good, before the progress report ends. */
  onEnd?: (digest: string) => Promise<void>;
}

/**
 * Streams an export through an ExportReader with progress; the tenant is insisted on only
 * when --tenant (or HEFESTO_TENANT) named one. `digest` is the SHA-256 of the file's bytes.
 */
export const checkFile = async (
  ctx: Context,
  path: string,
  options: CheckOptions,
): Promise<{ check: FileCheck; digest: string }> => {
  const { tenant, tenantGiven } = ctx.settings;
  const reader = new ExportReader(tenantGiven ? { tenant } : {});
  const file = await openLines(path);
  let progress: Progress | undefined;
  try {
    for await (const line of file.lines) {
      const event = reader.push(line);
      if (reader.failure !== undefined) break;
      if (event === undefined) continue;
      await options.onEvent?.(event);
      progress ??= new Progress({
        label: options.label,
        total: reader.header?.head.seq ?? 0,
        stream: ctx.stderr,
      });
      progress.update(event.seq);
    }
  } finally {
    file.close();
  }
  const check = reader.end();
  const digest = file.digest();
  if (check.ok) await options.onEnd?.(digest);
  progress?.finish(check.ok ? 'ok' : 'bad');
  return { check, digest };
};

/** One line about a bad file: where, which seq, why. */
export const describeFailure = (path: string, check: Extract<FileCheck, { ok: false }>): string =>
  `bad ${path}: ${check.firstBadSeq === null ? '' : `first bad seq ${check.firstBadSeq}, `}` +
  `line ${check.line}: ${check.reason}`;

export const verifyFile: Command = {
  name: 'verify-file',
  usage: 'FILE [--tenant T]',
  summary:
    `check an export (${EXPORT_FORMAT}) offline: every hash recomputed, linked from the ` +
    "stream's genesis, no seq missing, ending at the header's head",
  args: ['FILE'],
  options: {},
  run: async (ctx, [path = ''], _values) => {
    const { check } = await checkFile(ctx, path, { label: `check ${path}` });
    if (ctx.settings.json) {
      const { tenant, streamId, head } = check.ok ? check.header : {};
      await ctx.print(JSON.stringify(check.ok ? { ok: true, tenant, streamId, ...head } : check));
    } else if (check.ok) {
      const { tenant, streamId, head } = check.header;
      await ctx.print(`ok ${path}: ${tenant}/${streamId} seq ${head.seq} hash ${head.hash}`);
    } else {
      await ctx.print(describeFailure(path, check));
    }
    return check.ok ? 0 : 1;
  },
};
