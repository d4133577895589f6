import { Ledger, type LedgerSettings } from '../../shared/ledger/ledger.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { StorePair } from './stores.js';

/**
 * An ObjectStore that counts what passes through it by key prefix (bytes put, objects got)
 * and the GETs in flight at once: what a snapshot, a fork or a hydration costs.
 */
export const meteredObjects = (inner: ObjectStore) => {
  const m = { putBytes: 0, puts: 0, gets: 0, chunkGets: 0, inFlight: 0, maxInFlight: 0 };
  const putKeys: string[] = [];
  const getKeys: string[] = [];
  const store: ObjectStore = {
    get: async (key) => {
      m.gets++;
      getKeys.push(key);
      if (key.includes('/chunks/')) m.chunkGets++;
      m.inFlight++;
      m.maxInFlight = Math.max(m.maxInFlight, m.inFlight);
      try {
        return await inner.get(key);
      } finally {
        m.inFlight--;
      }
    },
    head: (key) => inner.head(key),
    list: (prefix, options) => inner.list(prefix, options),
    putIfAbsent: (key, body) => {
      m.puts++;
      m.putBytes += body.length;
      putKeys.push(key);
      return inner.putIfAbsent(key, body);
    },
    putIfMatch: (key, body, etag) => {
      m.puts++;
      m.putBytes += body.length;
      putKeys.push(key);
      return inner.putIfMatch(key, body, etag);
    },
    delete: (key) => inner.delete(key),
  };
  const reset = () => {
    for (const k of Object.keys(m) as Array<keyof typeof m>) m[k] = 0;
    putKeys.length = 0;
    getKeys.length = 0;
  };
  return { store, m, putKeys, getKeys, reset };
};

export type Metered = ReturnType<typeof meteredObjects>;

/** A ledger (one process) over the stores, its objects metered. */
export const meteredLedger = (
  stores: StorePair,
  settings: LedgerSettings = {},
  clock: { now(): number } = { now: () => Date.now() },
) => {
  const metered = meteredObjects(stores.objects);
  const ledger = new Ledger({ objects: metered.store, records: stores.records, clock }, settings);
  return { ledger, metered };
};
