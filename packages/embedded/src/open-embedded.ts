import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { HefestoClient } from '@hefesto/client';
import {
  type CompactionTimer,
  startCompactionTimer,
} from '../../../functions/wiring/compaction.js';
import { createEmbedded, type Embedded } from '../../../functions/wiring/embedded.js';
import { parseSettings } from '../../../shared/config/settings.js';
import { inProcessFetch } from './in-process-fetch.js';
import { serveLoopback } from './serve.js';
import type { EmbeddedEngine, EmbeddedOptions, ServedEngine } from './types.js';

/**
 * The code of the error a second open of a held data directory rejects with (in this process
 * or another); the error's `pid` names the holder, `dir` the directory.
 *
 * @example
 * ```ts
 * try {
 *   await openEmbedded({ dataDir: '.hefesto' });
 * } catch (err) {
 *   if ((err as { code?: string }).code === DATA_DIR_IN_USE) console.error((err as Error).message);
 * }
 * ```
 */
export const DATA_DIR_IN_USE = 'ErrDataDirInUse';

/** How long close() waits for the writer threads to fold their connections (as the server). */
const WRITER_GRACE_MS = 10_000;

/**
 * The trust store's name for this engine: one per data directory (its real path), so that the
 * heads a verifying client keeps for one directory are never checked against another's.
 */
const baseUrlOf = (dataDir: string) =>
  `http://${createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 16)}.embedded.invalid`;

/**
 * Opens the engine on a data directory (see the package README):
 *   1. settings as `npm start` reads them (`env`, `dataDir` over HEFESTO_DATA_DIR);
 *   2. the stores, services and app of the embedded server (functions/wiring/embedded.ts):
 *      the directory's lock first (held: DataDirInUseError, `ErrDataDirInUse`, naming the
 *      holder's pid), then the signing key's check (`ready`);
 *   3. a process key for the principal (KeyService.mintProcessKey: hashed, in memory only);
 *   4. the client, whose fetch is the app's handler; the compactor's timer (unref'd, as are
 *      the writer's threads while idle: an idle engine never keeps the host alive);
 *   5. with `serve`, the loopback listener (and the first operator key, if none was made).
 * A failure at any step closes what the steps before opened.
 *
 * @example
 * ```ts
 * const { client, close } = await openEmbedded({ dataDir: '.hefesto' });
 * const { head } = await client.append('run-1', [{ type: 'note', payload: 1 }]);
 * await close();
 * ```
 */
export const openEmbedded = async (options: EmbeddedOptions = {}): Promise<EmbeddedEngine> => {
  const env = { ...(options.env ?? process.env) };
  if (options.dataDir !== undefined) env.HEFESTO_DATA_DIR = options.dataDir;
  if (options.durability !== undefined) env.HEFESTO_DURABILITY = options.durability;
  env.HEFESTO_LOG_LEVEL = options.logLevel ?? env.HEFESTO_LOG_LEVEL ?? 'warn';
  delete env.PORT;
  const settings = parseSettings(env);
  const dataDir = resolve(settings.dataDir);
  const embedded: Embedded = createEmbedded({ ...settings, dataDir });
  const transport = inProcessFetch(embedded.fetch);
  let compaction: CompactionTimer | undefined;
  let listener: Awaited<ReturnType<typeof serveLoopback>> | undefined;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      await Promise.all([listener?.close(), transport.drain()]);
      await compaction?.stop();
      await transport.drain(); // what the listener's last requests started
      embedded.keys.dropProcessKeys();
      embedded.close();
      // The writer's threads close their connections after every write sent before; a request
      // answered after that says they are done (the last connection folds the WAL).
      await Promise.race([
        embedded.durableWriterStats().catch(() => undefined),
        new Promise((r) => setTimeout(r, WRITER_GRACE_MS).unref()),
      ]);
    })();
    return closed;
  };
  try {
    await embedded.ready;
    const tenant = options.principal?.tenant ?? 'default';
    const principal = embedded.keys.mintProcessKey({
      tenant,
      scopes: options.principal?.scopes ?? ['read', 'write', 'admin'],
    });
    const baseUrl = baseUrlOf(dataDir);
    const client = new HefestoClient({
      ...options.client,
      baseUrl,
      apiKey: principal.key,
      tenant,
      fetch: transport.fetch,
    });
    let served: ServedEngine | undefined;
    if (options.serve) {
      listener = await serveLoopback(transport.handle, options.serve);
      const first = settings.apiKey ? undefined : await embedded.keys.ensureBootstrapKey();
      served = {
        url: listener.url,
        ...(first && {
          firstKey: { id: first.id, key: first.key, tenant: first.tenant, scopes: first.scopes },
        }),
      };
    }
    const { intervalMs } = settings.compaction;
    if (intervalMs > 0)
      compaction = startCompactionTimer(embedded.compactor, embedded.logger, intervalMs);
    return { client, fetch: transport.fetch, baseUrl, apiKey: principal.key, served, close };
  } catch (err) {
    await close();
    throw err;
  }
};
