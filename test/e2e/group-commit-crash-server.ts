import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createEmbedded } from '../../functions/wiring/embedded.js';
import { parseSettings } from '../../shared/config/settings.js';
import type { CommitStep } from '../../shared/services/append.js';

/**
 * The embedded server (as functions/server.ts wires it: same stores, same admission of
 * appends), for group-commit-crash.test.ts. It listens on port 0 and prints
 * `listening <port>`. With CRASH_STEP and CRASH_AFTER it kills itself with SIGKILL right after
 * the CRASH_AFTER-th append passes CRASH_STEP:
 *
 * - `segment-written`: its segment is durable, its commit not yet sent. The durable writer
 *   answers a whole batch of segments at once, so the segments of the other appends of that
 *   batch are durable too, and their commits either not sent, or sent and maybe committed,
 *   none answered: the crash between the files and the transaction, for a batch.
 * - `committed`: its commit is durable, its answer not sent. The commits of the other appends
 *   of that records batch are durable too, none answered.
 */

const step = process.env.CRASH_STEP as CommitStep | undefined;
const after = Number(process.env.CRASH_AFTER ?? '0');
let passed = 0;
const embedded = createEmbedded(parseSettings(process.env), {
  crash: (at) => {
    if (at === step && ++passed === after) process.kill(process.pid, 'SIGKILL');
  },
});
const server = createAdaptorServer({ fetch: embedded.fetch });
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => {
    embedded.close();
    process.exit(0);
  });
  if ('closeAllConnections' in server) server.closeAllConnections();
});
