import { MemoryObjectStore } from '../../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../../shared/adapters/memory/memory-record-store.js';
import type { Clock } from '../../../shared/ports/clock.js';
import type { ObjectStore } from '../../../shared/ports/object-store.js';
import type {
  Item,
  ItemKey,
  QueryOptions,
  RecordStore,
  TransactOp,
  UpdateSpec,
  WriteOptions,
} from '../../../shared/ports/record-store.js';

/**
 * Memory stores whose whole content can be listed, copied and compared: the fuzz test takes
 * a snapshot before and after every request (a 4xx must leave it unchanged) and starts every
 * run from a copy of one seeded world.
 *
 * A RecordStore can only be queried by partition, so the wrapper remembers every partition
 * written through it; nothing reaches the memory store except through the wrapper.
 */
export class ListableRecordStore implements RecordStore {
  readonly #inner: MemoryRecordStore;
  readonly #partitions: Set<string>;

  constructor(clock: Clock, partitions: Iterable<string> = []) {
    this.#inner = new MemoryRecordStore({ clock });
    this.#partitions = new Set(partitions);
  }

  get partitions(): ReadonlySet<string> {
    return this.#partitions;
  }

  get(key: ItemKey) {
    return this.#inner.get(key);
  }

  put(item: Item, options?: WriteOptions) {
    this.#partitions.add(item.pk);
    return this.#inner.put(item, options);
  }

  update(key: ItemKey, update: UpdateSpec, options?: WriteOptions) {
    this.#partitions.add(key.pk);
    return this.#inner.update(key, update, options);
  }

  delete(key: ItemKey, options?: WriteOptions) {
    return this.#inner.delete(key, options);
  }

  transact(ops: TransactOp[]) {
    for (const op of ops) this.#partitions.add(op.kind === 'put' ? op.item.pk : op.key.pk);
    return this.#inner.transact(ops);
  }

  query(pk: string, options?: QueryOptions) {
    return this.#inner.query(pk, options);
  }

  /** Every visible item, partition by partition. */
  async items(): Promise<Item[]> {
    const out: Item[] = [];
    for (const pk of [...this.#partitions].sort()) {
      let after: string | undefined;
      do {
        const page = await this.#inner.query(pk, { after });
        out.push(...page.items);
        after = page.next;
      } while (after !== undefined);
    }
    return out;
  }
}

export interface StoredContent {
  objects: Array<{ key: string; body: Uint8Array }>;
  items: Item[];
}

export const objectKeys = async (objects: ObjectStore): Promise<string[]> => {
  const keys: string[] = [];
  let after: string | undefined;
  do {
    const page = await objects.list('', { after });
    keys.push(...page.items.map((i) => i.key));
    after = page.next;
  } while (after !== undefined);
  return keys;
};

/** Everything stored, with the object bodies (to copy a world). */
export const readContent = async (
  objects: ObjectStore,
  records: ListableRecordStore,
): Promise<StoredContent> => {
  const list: StoredContent['objects'] = [];
  for (const key of await objectKeys(objects)) {
    const stored = await objects.get(key);
    if (stored) list.push({ key, body: stored.body });
  }
  return { objects: list, items: await records.items() };
};

/** Fresh memory stores holding a copy of `content`. */
export const storesFrom = async (content: StoredContent, clock: Clock) => {
  const objects = new MemoryObjectStore();
  const records = new ListableRecordStore(clock);
  for (const { key, body } of content.objects) await objects.putIfAbsent(key, body);
  for (const item of content.items) await records.put(item);
  return { objects, records };
};

/**
 * A fingerprint of everything stored: object keys with their etags, and every item. Two
 * equal fingerprints mean nothing was created, changed or deleted in between.
 */
export const fingerprint = async (
  objects: ObjectStore,
  records: ListableRecordStore,
): Promise<Map<string, string>> => {
  const out = new Map<string, string>();
  let after: string | undefined;
  do {
    const page = await objects.list('', { after });
    for (const info of page.items) out.set(`object ${info.key}`, info.etag);
    after = page.next;
  } while (after !== undefined);
  for (const item of await records.items()) {
    out.set(`record ${item.pk} ${item.sk}`, JSON.stringify(item));
  }
  return out;
};

/** What changed between two fingerprints, one line per entry. */
export const changes = (before: Map<string, string>, after: Map<string, string>): string[] => {
  const out: string[] = [];
  for (const [key, value] of after) {
    const old = before.get(key);
    if (old === undefined) out.push(`created ${key}`);
    else if (old !== value) out.push(`changed ${key}: ${old} -> ${value}`);
  }
  for (const key of before.keys()) if (!after.has(key)) out.push(`deleted ${key}`);
  return out;
};
