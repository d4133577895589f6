import { writeSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createEmbedded } from '../../functions/wiring/embedded.js';
import {
  type DurableWrite,
  durableWriterTestHooks,
} from '../../shared/adapters/local/durable-writer.js';
import { CLIENT_IDEMPOTENCY_PREFIX } from '../../shared/chain/storage-keys.js';
import { parseSettings } from '../../shared/config/settings.js';

/**
 * The embedded server (as functions/server.ts wires it: same stores, same admission of
 * appends), for group-commit-crash.test.ts. It listens on port 0 and prints
 * `listening <port>`. With CRASH_AT and CRASH_AFTER it kills itself with SIGKILL at the
 * CRASH_AFTER-th transaction of the durable writer that applied the writes of two appends or
 * more (CRASH_MIN_APPENDS), as its answers arrive, before any of them is delivered
 * (durable-writer.ts's test hook). Objects and records share one file (local-stores.ts), so a
 * transaction holding only segments is committed without a sync (its appends' commits sync):
 *
 * - `segments`: a transaction of the objects' lane. The segments of its appends are durable,
 *   their commits not sent: the crash between the files and the transaction, for a batch
 *   (append.ts, 2b).
 * - `commits`: a transaction of the records' lane. The commits of its appends are durable,
 *   none answered by it (3c); an append whose segment another writer rolled forward in it
 *   can read that commit from the database and answer before the kill.
 */

const at = process.env.CRASH_AT;
const lane = at === 'segments' ? 'objects' : at === 'commits' ? 'records' : undefined;
const after = Number(process.env.CRASH_AFTER ?? '1');
// How many appends the transaction must hold (1: a lone writer's, one append at a time).
const minAppends = Number(process.env.CRASH_MIN_APPENDS ?? '2');
// The writes of a batch that belong to appends: segment puts (objects) and commits, which
// carry the append's idempotency record (records). A batch also holds other writes (a tile
// written with a segment, a lease or a purge), which are not counted.
const params = (w: DurableWrite) => w.writes.flatMap(([, p]) => p);
const isKeyOfLane = (p: unknown): p is string =>
  typeof p === 'string' &&
  (lane === 'objects' ? p.includes('/seg/') : p.startsWith(CLIENT_IDEMPOTENCY_PREFIX));
const isAppend = (w: DurableWrite) => params(w).some(isKeyOfLane);
let passed = 0;
if (lane) {
  durableWriterTestHooks.durable = (of, applied) => {
    const appends = applied.filter(isAppend);
    if (of !== lane || appends.length < minAppends || ++passed !== after) return;
    // What the batch held, for the test to account for each, in one line written before the
    // kill: `killed-batch <json>` (the segments' keys, or the commits' idempotency keys).
    const keys = appends.flatMap((w) => params(w).filter(isKeyOfLane));
    writeSync(1, `killed-batch ${JSON.stringify(keys)}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
const embedded = createEmbedded(parseSettings(process.env));
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
