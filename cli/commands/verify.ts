import type { VerifyResult } from '../../shared/client/types.js';
import { type Command, flagOption } from '../command.js';
import { type Context, tenantHint } from '../context.js';
import { Progress } from '../progress.js';

const report = async (ctx: Context, stream: string, result: VerifyResult, hint: string) => {
  if (ctx.settings.json) await ctx.print(JSON.stringify(result));
  else if (result.ok) await ctx.print(`ok ${stream} seq ${result.seq} hash ${result.hash}`);
  else await ctx.print(`bad ${stream}: first bad seq ${result.firstBadSeq}${hint}`);
  return result.ok ? 0 : 1;
};

export const verify: Command = {
  name: 'verify',
  usage: 'STREAM [--local]',
  summary:
    "verify a stream's hash chain: on the server, or with --local here, from genesis " +
    "(trusting neither server nor storage; the chain's tenant is the key's)",
  args: ['STREAM'],
  options: { local: { type: 'boolean' } },
  run: async (ctx, [stream = ''], values) => {
    if (!flagOption(values, 'local')) {
      return report(ctx, stream, await ctx.client().verify(stream), '');
    }
    // From genesis, which is bound to the tenant: the key's, as the server says.
    const tenant = await ctx.tenant();
    const client = ctx.client({ tenant: tenant.tenant });
    let progress: Progress | undefined;
    const result = await client.verifyLocally(stream, (seq, of) => {
      progress ??= new Progress({ label: `verify ${stream}`, total: of, stream: ctx.stderr });
      progress.update(seq, of);
    });
    progress?.finish(result.ok ? 'ok' : 'bad');
    const hint = result.ok ? '' : tenantHint(result.firstBadSeq, tenant);
    return report(ctx, stream, result, hint);
  },
};
