import { writeSync } from 'node:fs';
import { remoteWriterTestHooks } from '../../shared/adapters/local/remote-writer.js';
import { CLIENT_IDEMPOTENCY_PREFIX } from '../../shared/chain/storage-keys.js';

/**
 * The embedded server as `npm start` runs it (functions/server.ts; HEFESTO_WORKERS > 1 for
 * multi-process-crash.test.ts), with one test hook in the writer process: the reply to the
 * first commit of a client's append (a records write carrying its idempotency record) is
 * dropped after the write was applied, and `dropped-reply` printed. The worker that sent it
 * waits HEFESTO_WRITER_TIMEOUT_MS and answers 503.
 */

let dropped = false;
remoteWriterTestHooks.dropReply = (lane, write) => {
  if (dropped || lane !== 'records') return false;
  const commit = write.writes.some(([, params]) =>
    params.some((p) => typeof p === 'string' && p.startsWith(CLIENT_IDEMPOTENCY_PREFIX)),
  );
  if (!commit) return false;
  dropped = true;
  writeSync(1, 'dropped-reply\n');
  return true;
};

await import('../../functions/server.js');
