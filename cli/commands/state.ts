import { type Command, intOption } from '../command.js';

export const stateGet: Command = {
  name: 'state',
  usage: 'STREAM [--at N]',
  summary: 'the state at the head or at seq N (digest recomputed here), as JSON',
  args: ['STREAM'],
  options: { at: { type: 'string' } },
  run: async (ctx, [stream = ''], values) => {
    const at = intOption(values, 'at', 1);
    const result = await ctx.client({ verify: true }).getState(stream, { at });
    await ctx.print(JSON.stringify(result, null, ctx.settings.json ? undefined : 2));
    return 0;
  },
};
