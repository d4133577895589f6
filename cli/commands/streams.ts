import type { Command } from '../command.js';
import { fieldLines } from '../context.js';

export const streamsGet: Command = {
  name: 'streams get',
  usage: 'STREAM',
  summary: "a stream's chain head: seq, hash, state digest, times",
  args: ['STREAM'],
  options: {},
  run: async (ctx, [stream = ''], _values) => {
    const head = await ctx.client().getStream(stream);
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(head));
      return 0;
    }
    const lines = fieldLines([
      ['stream', head.streamId],
      ['seq', head.seq],
      ['hash', head.hash],
      ['stateDigest', head.stateDigest],
      ['stateSeq', head.stateSeq],
      ['deltas', head.deltas],
      ['createdAt', head.createdAt],
      ['updatedAt', head.updatedAt],
    ]);
    for (const line of lines) await ctx.print(line);
    return 0;
  },
};
