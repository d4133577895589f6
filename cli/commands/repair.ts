import { Transport } from '../../shared/client/http.js';
import type { Command } from '../command.js';
import { CliError, fieldLines } from '../context.js';

/** The server's answer (POST /v1/streams/{streamId}/repair). */
interface RepairAnswer {
  repaired: boolean;
  before: { seq: number; hash: string } | null;
  head: { seq: number; hash: string; stateDigest: string; deltas: number; stateSeq: number };
  prunedSeq?: number;
}

/**
 * `hefesto repair STREAM`: asks the server to rebuild the stream's chain head from its
 * verified segments (admin key). For a stream whose head was deleted or edited, which reads
 * and appends refuse with ErrTamperedLedger; see docs/operations.md. Safe to run again: a
 * head that matches its chain is left as it is.
 */
export const repair: Command = {
  name: 'repair',
  usage: 'STREAM',
  summary:
    "rebuild a stream's chain head from its verified segments, when it was deleted or no " +
    'longer matches the chain (needs an admin key; see docs/operations.md)',
  args: ['STREAM'],
  options: {},
  run: async (ctx, [stream = ''], _values) => {
    const { url, key } = ctx.settings;
    if (key === undefined || key === '') {
      throw new CliError('ErrUnauthorized', 'no API key: set HEFESTO_KEY or pass --key');
    }
    const transport = new Transport({ baseUrl: url, apiKey: key, retry: { maxAttempts: 4 } });
    const { body } = await transport.call<RepairAnswer>(
      'POST',
      `/v1/streams/${encodeURIComponent(stream)}/repair`,
      { repeatable: true },
    );
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(body));
      return 0;
    }
    const before = body.before ? `seq ${body.before.seq} hash ${body.before.hash}` : 'none';
    await ctx.print(
      body.repaired ? `repaired ${stream}` : `${stream}: the head already matches its chain`,
    );
    const lines = fieldLines([
      ['head before', before],
      ['head', `seq ${body.head.seq} hash ${body.head.hash}`],
      ['stateDigest', body.head.stateDigest],
      ['deltas', body.head.deltas],
      ['stateSeq', body.head.stateSeq],
      ...(body.prunedSeq === undefined ? [] : [['prunedSeq', body.prunedSeq] as [string, number]]),
    ]);
    for (const line of lines) await ctx.print(line);
    return 0;
  },
};
