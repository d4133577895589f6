import type { Command } from '../command.js';
import { fieldLines, type WhoAmI } from '../context.js';

export const whoami: Command = {
  name: 'whoami',
  usage: '',
  summary: "the key's id, tenant and scopes, and whether it is the operator key (any scope)",
  args: [],
  options: {},
  run: async (ctx) => {
    const who = (await ctx.transport().call<WhoAmI>('GET', '/v1/whoami')).body;
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(who));
      return 0;
    }
    const lines = fieldLines([
      ['key', who.keyId],
      ['tenant', who.tenant],
      ['scopes', who.scopes.join(',')],
      ['operator', who.operator ? 'yes' : 'no'],
    ]);
    for (const line of lines) await ctx.print(line);
    return 0;
  },
};
