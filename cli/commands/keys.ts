import type { Scope } from '../../shared/client/types.js';
import { type Command, stringOption } from '../command.js';
import { fieldLines, UsageError } from '../context.js';

const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

const parseScopes = (text: string | undefined): Scope[] => {
  if (text === undefined) throw new UsageError('--scopes is required, e.g. --scopes read,write');
  const scopes = text.split(',').map((s) => s.trim());
  const bad = scopes.find((s) => !SCOPES.includes(s as Scope));
  if (bad !== undefined) {
    throw new UsageError(`unknown scope "${bad}" (scopes: ${SCOPES.join(', ')})`);
  }
  return [...new Set(scopes)] as Scope[];
};

export const keysCreate: Command = {
  name: 'keys create',
  usage: '--scopes read,write[,admin] [--tenant T]',
  summary:
    "create an API key (admin scope); --tenant defaults to the caller's tenant, another " +
    'tenant needs the operator key (printed at the first start) or the root key',
  args: [],
  options: { scopes: { type: 'string' } },
  run: async (ctx, _args, values) => {
    const scopes = parseScopes(stringOption(values, 'scopes'));
    // Only an explicit --tenant names the new key's tenant; otherwise the server uses the
    // caller's, which is what an admin of one tenant means.
    const tenant = stringOption(values, 'tenant');
    const created = await ctx
      .client()
      .createKey(tenant === undefined ? { scopes } : { tenant, scopes });
    if (ctx.settings.json) {
      await ctx.print(JSON.stringify(created));
    } else {
      const lines = fieldLines([
        ['id', created.id],
        ['key', created.key],
        ['tenant', created.tenant],
        ['scopes', created.scopes.join(',')],
      ]);
      for (const line of lines) await ctx.print(line);
      ctx.stderr.write('the key is shown only once: store it now\n');
    }
    return 0;
  },
};

export const keysRevoke: Command = {
  name: 'keys revoke',
  usage: 'ID',
  summary: 'revoke an API key by its id (admin scope)',
  args: ['ID'],
  options: {},
  run: async (ctx, [id = ''], _values) => {
    await ctx.client().revokeKey(id);
    await ctx.print(ctx.settings.json ? JSON.stringify({ revoked: id }) : `revoked ${id}`);
    return 0;
  },
};
