import { defaultTrustStorePath, FileTrustStore } from '../../shared/client/trust-store-file.js';
import type { Command } from '../command.js';

/**
 * `hefesto trust forget URL`: drops every signed head this machine trusts for the server at
 * URL from the trust file ($HEFESTO_TRUST_FILE, default ~/.hefesto/trusted-heads.json). For a
 * server whose data was reset on purpose: its new streams are then trusted on first use
 * again. A server that lost or rewrote history is not fixed by this; it only stops saying so.
 */
export const trustForget: Command = {
  name: 'trust forget',
  usage: 'URL',
  summary:
    'forget the signed heads this machine trusts for the server at URL (trust file ' +
    "$HEFESTO_TRUST_FILE, default ~/.hefesto/trusted-heads.json), after that server's data " +
    'was reset on purpose; its streams are then trusted on first use again',
  args: ['URL'],
  options: {},
  run: async (ctx, [url = ''], _values) => {
    const path = defaultTrustStorePath(ctx.env);
    const forgotten = await new FileTrustStore(path).forget(url);
    await ctx.print(
      ctx.settings.json
        ? JSON.stringify({ forgotten, baseUrl: url.replace(/\/+$/, ''), trustFile: path })
        : `forgot ${forgotten} trusted head${forgotten === 1 ? '' : 's'} of ${url} (${path})`,
    );
    return 0;
  },
};
