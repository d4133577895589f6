import type { LedgerEvent } from '../../shared/client/types.js';
import { type Command, stringOption } from '../command.js';
import type { Context } from '../context.js';
import {
  EXPORT_FORMAT,
  type ExportHeader,
  ExportReader,
  type FileCheck,
} from '../export-format.js';
import {
  checkFileHead,
  FileTree,
  type HeadCheck,
  headSizeOf,
  loadKeys,
  readJsonFile,
} from '../file-tree-head.js';
import { openLines } from '../files.js';
import { Progress } from '../progress.js';

export interface CheckOptions {
  /** Progress label. */
  label: string;
  /** Called with each event while the file is good so far. */
  onEvent?: (event: LedgerEvent, header: ExportHeader) => Promise<void>;
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
      if (reader.header) await options.onEvent?.(event, reader.header);
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
  usage: 'FILE [--tenant T] [--head HEAD.json] [--keys JWKS.json]',
  summary:
    `check an export (${EXPORT_FORMAT}) offline: every hash recomputed, linked from the ` +
    "stream's genesis, no seq missing, ending at the header's head; and against a signed tree " +
    "head (--head FILE, else the one in the file's header): the file's events rebuild its " +
    'Merkle root, signed by a key of --keys FILE (a JWK set), else of the server',
  args: ['FILE'],
  options: { head: { type: 'string' }, keys: { type: 'string' } },
  run: async (ctx, [path = ''], values) => {
    const headFile = stringOption(values, 'head');
    const given = headFile === undefined ? undefined : await readJsonFile(headFile, 'signed head');
    let tree: FileTree | undefined;
    const { check } = await checkFile(ctx, path, {
      label: `check ${path}`,
      onEvent: async (event, header) => {
        const raw = given ?? header.treeHead;
        if (raw === undefined) return;
        tree ??= new FileTree([headSizeOf(raw) ?? -1]);
        tree.push(event);
      },
    });
    let signed: HeadCheck | undefined;
    if (check.ok) {
      const raw = given ?? check.header.treeHead;
      const keysFile = stringOption(values, 'keys');
      const noKeys = keysFile === undefined && !ctx.settings.key;
      if (raw !== undefined && noKeys && given === undefined) {
        // Offline, nothing to check the header's head with: the chain check stands alone.
        ctx.stderr.write(
          "note: the header's signed tree head was not checked (no keys: pass --keys FILE)\n",
        );
      } else if (raw !== undefined) {
        const keys = await loadKeys(
          stringOption(values, 'keys'),
          async () => (await ctx.transport().call('GET', '/v1/signing-keys')).body,
        );
        const { tenant, streamId } = check.header;
        signed = checkFileHead(
          raw,
          keys,
          { tenant, streamId, events: check.events },
          tree ?? new FileTree([headSizeOf(raw) ?? -1]),
        );
      }
    }
    const ok = check.ok && (signed === undefined || signed.ok);
    if (ctx.settings.json) {
      const { tenant, streamId, head } = check.ok ? check.header : {};
      const treeHead = signed?.ok ? { treeHead: signed.head } : {};
      await ctx.print(
        JSON.stringify(
          !check.ok
            ? check
            : signed && !signed.ok
              ? signed
              : { ok: true, tenant, streamId, ...head, ...treeHead },
        ),
      );
    } else if (!check.ok) {
      await ctx.print(describeFailure(path, check));
    } else if (signed && !signed.ok) {
      await ctx.print(`bad ${path}: ${signed.reason}`);
    } else {
      const { tenant, streamId, head } = check.header;
      await ctx.print(`ok ${path}: ${tenant}/${streamId} seq ${head.seq} hash ${head.hash}`);
      if (signed?.ok) {
        const h = signed.head;
        await ctx.print(
          `  signed tree head: size ${h.treeSize} root ${h.rootHash} (key ${h.keyId}) verified`,
        );
      }
    }
    return ok ? 0 : 1;
  },
};
