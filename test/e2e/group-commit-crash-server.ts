import { createAdaptorServer } from '@hono/node-server';
import { createEmbedded } from '../../functions/wiring/embedded.js';
import { parseSettings } from '../../shared/config/settings.js';

/**
 * The embedded server (as functions/server.ts wires it), for group-commit-crash.test.ts: it
 * kills itself with SIGKILL right after the CRASH_AFTER_SEGMENTS-th append has its segment
 * durable and before its commit transaction is sent. The durable writer answers a whole batch
 * of segments at once, so the segments of the other appends of that batch are durable too,
 * and their transactions are either not sent, or sent and possibly committed, but none
 * answered: the crash between the files and the transaction, for a batch.
 */

const after = Number(process.env.CRASH_AFTER_SEGMENTS);
let segments = 0;
const embedded = createEmbedded(parseSettings(process.env), {
  crash: (step) => {
    if (step === 'segment-written' && ++segments === after) process.kill(process.pid, 'SIGKILL');
  },
});
const server = createAdaptorServer({ fetch: embedded.fetch });
server.listen(Number(process.env.PORT), () => {
  process.stdout.write('listening\n');
});
