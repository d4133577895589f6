import { ensureBuilt } from '../../scripts/build.mjs';

/**
 * Vitest global setup: the server, the CLI and the compaction command as built JavaScript
 * (dist/node, scripts/build.mjs), rebuilt once before any test when a source is newer, so the
 * tests that spawn them never run a stale build (and workers do not race to build it).
 */
export default async function setup(): Promise<void> {
  await ensureBuilt();
}
