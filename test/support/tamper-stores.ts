import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { Item, ItemKey, RecordStore } from '../../shared/ports/record-store.js';
import type { WitnessStore, WitnessVersion } from '../../shared/ports/witness-store.js';
import type { StorePair } from './stores.js';

/**
 * The stores of the tamper matrix (tamper-world.ts): what the services write through, counted,
 * and what the stores hold, read behind their back.
 */

/** What the inventory reads: the raw stores, the counted ones, the witness. */
export interface StoresView {
  stores: StorePair;
  track: Tracked;
  witness: WitnessStore;
}

export interface Tracked {
  records: RecordStore;
  objects: ObjectStore;
  /** Successful writes through the tracked stores so far. */
  writes(): number;
  /** Every record key written through them. */
  recordKeys(): ItemKey[];
}

/** The stores as the services see them: every successful write counted, every key noted. */
export const tracked = (records: RecordStore, objects: ObjectStore): Tracked => {
  let writes = 0;
  const keys = new Map<string, ItemKey>();
  const note = (k: ItemKey) => keys.set(`${k.pk}\u0000${k.sk}`, { pk: k.pk, sk: k.sk });
  const counted = async <R>(run: Promise<R>, noted: ItemKey[]): Promise<R> => {
    const out = await run;
    writes++;
    for (const k of noted) note(k);
    return out;
  };
  return {
    writes: () => writes,
    recordKeys: () => [...keys.values()],
    records: {
      get: (key) => records.get(key),
      query: (pk, options) => records.query(pk, options),
      put: (item, options) => counted(records.put(item, options), [item]),
      update: (key, update, options) => counted(records.update(key, update, options), [key]),
      delete: (key, options) => counted(records.delete(key, options), [key]),
      transact: (ops) =>
        counted(
          records.transact(ops),
          ops.flatMap((op) => (op.kind === 'check' ? [] : [op.kind === 'put' ? op.item : op.key])),
        ),
    },
    objects: {
      get: (key) => objects.get(key),
      head: (key) => objects.head(key),
      list: (prefix, options) => objects.list(prefix, options),
      putIfAbsent: async (key, body) => {
        const out = await objects.putIfAbsent(key, body);
        if (out.created) writes++;
        return out;
      },
      putIfMatch: async (key, body, etag) => {
        const out = await objects.putIfMatch(key, body, etag);
        if (out.created) writes++;
        return out;
      },
      delete: (key) => counted(objects.delete(key), []),
    },
  };
};

/** What the stores hold: every record and object (with its bytes) and witness version. */
export interface Inventory {
  records: Map<string, Item>;
  objects: Map<string, Uint8Array>;
  /** The etag of each object, to tell a changed one without reading it. */
  etags: Map<string, string>;
  witness: WitnessVersion[];
}

export const recordId = (k: ItemKey) => `${k.pk}\u0000${k.sk}`;

/** Every record key stored: those the services wrote, and what the table holds. */
export const storedRecordKeys = async (world: StoresView): Promise<ItemKey[]> => {
  const keys = new Map<string, ItemKey>();
  for (const k of world.track.recordKeys()) keys.set(recordId(k), k);
  for (const k of (await world.stores.scanKeys?.()) ?? []) keys.set(recordId(k), k);
  return [...keys.values()];
};

/** Every object stored, with its etag. */
export const storedObjects = async (world: StoresView): Promise<Map<string, string>> => {
  const out = new Map<string, string>();
  let after: string | undefined;
  do {
    const page = await world.stores.objects.list('', { after });
    for (const info of page.items) out.set(info.key, info.etag);
    after = page.next;
  } while (after !== undefined);
  return out;
};

export const inventory = async (world: StoresView): Promise<Inventory> => {
  const { stores, witness } = world;
  const records = new Map<string, Item>();
  for (const k of await storedRecordKeys(world)) {
    const item = await stores.records.get(k);
    if (item) records.set(recordId(k), item);
  }
  const objects = new Map<string, Uint8Array>();
  const etags = new Map<string, string>();
  for (const key of (await storedObjects(world)).keys()) {
    const stored = await stores.objects.get(key);
    if (stored) {
      objects.set(key, Uint8Array.from(stored.body));
      etags.set(key, stored.etag);
    }
  }
  return { records, objects, etags, witness: await witness.versions('') };
};
