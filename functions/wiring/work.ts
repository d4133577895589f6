import { RUNTIME_RESERVE_MIB, type Settings } from '../../shared/config/settings.js';
import type { LedgerSettings } from '../../shared/ledger/ledger.js';
import { StateCache } from '../../shared/state/checkpoint.js';
import { MemoryPool } from '../../shared/state/memory-pool.js';

const MIB = 1024 * 1024;

/**
 * The ledger's work budget and caches, sized from the memory ceiling (settings.ts, "work";
 * docs/state-v2.md, "Limits"): what one request may materialise, the chunk cache's bytes and
 * the warm-state cache's memory, all drawn from one memory pool of HEFESTO_MEMORY_MIB less
 * the runtime's reserve (memory-pool.ts), which the HTTP app opens a scope of per request.
 */
export const workLedgerSettings = (settings: Settings): LedgerSettings => {
  const memory = new MemoryPool({
    capacity: (settings.work.memoryMiB - RUNTIME_RESERVE_MIB) * MIB,
  });
  return {
    budget: settings.work.budget,
    chunkCacheBytes: settings.work.chunkCacheBytes,
    memory,
    stateCache: new StateCache(256, settings.work.stateCacheBytes, memory),
  };
};
