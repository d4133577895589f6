import type { HefestoClient } from '../../shared/client/client.js';
import { ClientVerificationError, HefestoApiError } from '../../shared/client/errors.js';
import { genesisHash } from '../../shared/domain/event.js';
import { type ChainPoint, verifyEvents } from '../../shared/domain/verify.js';
import { type Command, stringOption } from '../command.js';
import { type Context, fieldLines, tenantHint } from '../context.js';
import { EXPORT_FORMAT, type ExportHeader, eventLine, headerLine } from '../export-format.js';
import { fileSink, type Sink, stdoutSink } from '../files.js';
import { Progress } from '../progress.js';

const PAGE = 1000;

/**
 * The stream's head and, when the server signs trees, its signed tree head at that same seq
 * (read again while appends move the head between the two reads; after a few tries the
 * export goes without one).
 */
const headWithTree = async (ctx: Context, client: HefestoClient, stream: string) => {
  const http = ctx.transport();
  for (let attempt = 0; attempt < 5; attempt++) {
    let treeHead: { treeBase: number; treeSize: number } | undefined;
    try {
      treeHead = (
        await http.call<{ treeBase: number; treeSize: number }>(
          'GET',
          `/v1/streams/${encodeURIComponent(stream)}/tree-head`,
        )
      ).body;
    } catch (err) {
      if (!(err instanceof HefestoApiError) || err.status !== 404) throw err;
      return { head: await client.getStream(stream), treeHead: undefined };
    }
    const head = await client.getStream(stream);
    if (head.seq === treeHead.treeBase + treeHead.treeSize) return { head, treeHead };
  }
  return { head: await client.getStream(stream), treeHead: undefined };
};

export const exportStream: Command = {
  name: 'export',
  usage: 'STREAM [--out FILE]',
  summary:
    `write a stream up to its current head as NDJSON (${EXPORT_FORMAT}: a header, then every ` +
    'event with its hashes), verifying each page here; to stdout or FILE (written whole or not at all)',
  args: ['STREAM'],
  options: { out: { type: 'string' } },
  run: async (ctx, [stream = ''], values) => {
    const keyTenant = await ctx.tenant();
    const { tenant } = keyTenant;
    const client = ctx.client({ tenant });
    const { head, treeHead } = await headWithTree(ctx, client, stream);
    const header: ExportHeader = {
      format: EXPORT_FORMAT,
      tenant,
      streamId: stream,
      head: { seq: head.seq, hash: head.hash },
      exportedAt: new Date().toISOString(),
      ...(treeHead === undefined ? {} : { treeHead }),
      digestVersion: head.digestVersion ?? 1,
    };
    const out = stringOption(values, 'out');
    const sink: Sink = out === undefined ? stdoutSink(ctx.stdout) : await fileSink(out);
    const progress = new Progress({
      label: `export ${stream}`,
      total: head.seq,
      stream: ctx.stderr,
    });
    try {
      await sink.write(`${headerLine(header)}\n`);
      let point: ChainPoint = { seq: 0, hash: genesisHash(tenant, stream) };
      while (point.seq < head.seq) {
        const page = await client.readEvents(stream, { from: point.seq + 1, limit: PAGE });
        // Events appended since the head was read are left out: the file ends at its header's head.
        const events = page.events.filter((e) => e.seq <= head.seq);
        if (events.length === 0) {
          throw new ClientVerificationError(point.seq + 1, 'the server returned no events');
        }
        const result = verifyEvents(events as never, point);
        if (!result.ok) {
          const hint = tenantHint(result.firstBadSeq, keyTenant);
          throw new ClientVerificationError(result.firstBadSeq, `${result.reason}${hint}`);
        }
        await sink.write(events.map((e) => `${eventLine(e)}\n`).join(''));
        point = { seq: result.seq, hash: result.hash };
        progress.update(point.seq);
      }
      if (point.hash !== head.hash) {
        throw new ClientVerificationError(head.seq, 'the chain does not end at the reported head');
      }
      await sink.commit();
    } catch (err) {
      await sink.abort();
      throw err;
    }
    progress.finish();
    if (out !== undefined) {
      const summary = { file: out, tenant, streamId: stream, seq: head.seq, hash: head.hash };
      if (ctx.settings.json) await ctx.print(JSON.stringify(summary));
      else for (const line of fieldLines(Object.entries(summary))) await ctx.print(line);
    }
    return 0;
  },
};
