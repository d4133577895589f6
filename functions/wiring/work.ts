import type { Settings } from '../../shared/config/settings.js';
import { StateCache } from '../../shared/services/checkpoint.js';
import type { LedgerSettings } from '../../shared/services/ledger.js';

/**
 * The ledger's work budget and caches, sized from the memory ceiling (settings.ts, "work";
 * docs/state-v2.md, "Limits"): what one request may materialise, the chunk cache's bytes and
 * the warm-state cache's memory.
 */
export const workLedgerSettings = (settings: Settings): LedgerSettings => ({
  budget: settings.work.budget,
  chunkCacheBytes: settings.work.chunkCacheBytes,
  stateCache: new StateCache(256, settings.work.stateCacheBytes),
});
