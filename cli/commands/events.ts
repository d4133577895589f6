import { type Command, flagOption, intOption, stringOption } from '../command.js';
import { eventLine } from '../export-format.js';

/**
 * Aborts on the first SIGINT/SIGTERM (the follow loop then ends cleanly, exit 0); a second
 * signal exits at once.
 */
const interruptSignal = (): { signal: AbortSignal; dispose(): void } => {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
};

export const eventsTail: Command = {
  name: 'events tail',
  usage: 'STREAM [--from N] [--type T] [--follow [--interval MS]] [--verify]',
  summary:
    'events as NDJSON, one per line, from seq N (default 1); --follow polls for new ones ' +
    "until Ctrl-C; --verify checks the chain here (from genesis, bound to the key's tenant)",
  args: ['STREAM'],
  options: {
    from: { type: 'string' },
    type: { type: 'string' },
    follow: { type: 'boolean' },
    interval: { type: 'string' },
    verify: { type: 'boolean' },
  },
  run: async (ctx, [stream = ''], values) => {
    const verify = flagOption(values, 'verify');
    // Verifying from genesis needs the chain's tenant: the key's.
    const tenant = verify ? (await ctx.tenant()).tenant : undefined;
    const client = ctx.client({ verify, tenant });
    const follow = flagOption(values, 'follow');
    const interrupt = follow ? interruptSignal() : undefined;
    try {
      const events = client.events(stream, {
        from: intOption(values, 'from', 1),
        type: stringOption(values, 'type'),
        follow,
        pollMs: intOption(values, 'interval', 50) ?? 1000,
        signal: interrupt?.signal,
      });
      for await (const event of events) {
        await ctx.print(eventLine(event));
        if (interrupt?.signal.aborted) break;
      }
    } finally {
      interrupt?.dispose();
    }
    return 0;
  },
};
