import { streamObjectPrefix, streamPk } from '../../shared/chain/storage-keys.js';
import { classifyObjectKey, classifyRecordKey } from '../../shared/chain/storage-kinds.js';
import type { Mutation, StorageKind } from '../../shared/chain/storage-kinds-model.js';
import type { Item, ItemKey } from '../../shared/ports/record-store.js';
import { type Inventory, recordId, storedObjects, storedRecordKeys } from './tamper-stores.js';
import { T, type TamperWorld } from './tamper-world.js';

/**
 * The tamperings of the matrix, done to the raw stores as someone with write access to the
 * table and the bucket would: each remembers what it replaced, and `restore` puts it back.
 */
export class Tamperer {
  readonly #records = new Map<string, { key: ItemKey; was: Item | undefined }>();
  readonly #objects = new Map<string, Uint8Array | undefined>();

  constructor(readonly world: TamperWorld) {}

  async #saveRecord(key: ItemKey) {
    const id = recordId(key);
    if (!this.#records.has(id)) {
      this.#records.set(id, { key, was: await this.world.stores.records.get(key) });
    }
  }

  async #saveObject(key: string) {
    if (!this.#objects.has(key)) {
      const stored = await this.world.stores.objects.get(key);
      this.#objects.set(key, stored ? Uint8Array.from(stored.body) : undefined);
    }
  }

  async putRecord(item: Item) {
    await this.#saveRecord(item);
    await this.world.stores.records.put(item);
  }

  async deleteRecord(key: ItemKey) {
    await this.#saveRecord(key);
    await this.world.stores.records.delete(key);
  }

  async putObject(key: string, body: Uint8Array) {
    await this.#saveObject(key);
    await writeObject(this.world, key, body);
  }

  async deleteObject(key: string) {
    await this.#saveObject(key);
    await this.world.stores.objects.delete(key);
  }

  /** Puts back everything this tamperer replaced. */
  async restore() {
    const { records, objects } = this.world.stores;
    for (const { key, was } of this.#records.values()) {
      if (was) await records.put(was);
      else await records.delete(key);
    }
    for (const [key, was] of this.#objects) {
      if (was) await writeObject(this.world, key, was);
      else await objects.delete(key);
    }
  }
}

/**
 * Puts the stores back as the world's final inventory holds them, after a case whose probe
 * wrote (a refused write's object, a key created again): records and objects written since
 * are deleted, changed ones put back. Answers how many it had to put back or delete.
 */
export const resync = async (world: TamperWorld): Promise<number> => {
  const { final } = world;
  const { records, objects } = world.stores;
  let fixed = 0;
  for (const key of await storedRecordKeys(world)) {
    const now = await records.get(key);
    const was = final.records.get(recordId(key));
    if (JSON.stringify(now) === JSON.stringify(was)) continue;
    if (was) await records.put(was);
    else await records.delete(key);
    fixed++;
  }
  for (const was of final.records.values()) {
    if (!(await records.get(was))) {
      await records.put(was);
      fixed++;
    }
  }
  const stored = await storedObjects(world);
  for (const [key, etag] of stored) {
    const was = final.objects.get(key);
    if (was === undefined) {
      await objects.delete(key);
      fixed++;
    } else if (etag !== final.etags.get(key)) {
      const body = (await objects.get(key))?.body;
      if (!body || !Buffer.from(body).equals(Buffer.from(was))) {
        await writeObject(world, key, was);
        fixed++;
      }
    }
  }
  for (const [key, body] of final.objects) {
    if (!stored.has(key)) {
      await writeObject(world, key, body);
      fixed++;
    }
  }
  return fixed;
};

/** Stores `body` at `key` whatever is there now (the port has only conditional puts). */
const writeObject = async (world: TamperWorld, key: string, body: Uint8Array) => {
  const { objects } = world.stores;
  const current = await objects.head(key);
  if (current) await objects.putIfMatch(key, body, current.etag);
  else await objects.putIfAbsent(key, body);
};

/** The stored keys of a kind in an inventory (record ids or object keys), in key order. */
export const keysOfKind = (inv: Inventory, kind: StorageKind): string[] =>
  (kind.store === 'records'
    ? [...inv.records.values()].filter((i) => classifyRecordKey(i) === kind).map(recordId)
    : [...inv.objects.keys()].filter((k) => classifyObjectKey(k) === kind)
  ).sort();

export const inStream = (stream: string) => (id: string) =>
  id.startsWith(`${streamPk(T, stream)}\u0000`) || id.startsWith(streamObjectPrefix(T, stream));

/** A stream's keys of a kind; of a kind of the tenant (chunks), every one. */
const ofStream = (inv: Inventory, kind: StorageKind, stream: string) => {
  const keys = keysOfKind(inv, kind);
  return keys.some((k) => k.startsWith('t#') || k.includes('/s/'))
    ? keys.filter(inStream(stream))
    : keys;
};

const flipHex = (hex: string) => `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`;

const flipLast = (body: Uint8Array) => {
  const c = Uint8Array.from(body);
  c[c.length - 1] = (c[c.length - 1] ?? 0) ^ 1;
  return c;
};

/** How the matrix edits one field of a record of each chain-bound kind. */
const EDITS: Record<string, (item: Item) => Item> = {
  head: (i) => ({ ...i, hash: flipHex(String(i.hash)) }),
  'segment-index': (i) => ({ ...i, lastHash: flipHex(String(i.lastHash)) }),
  'snapshot-index': (i) => ({ ...i, stateDigest: flipHex(String(i.stateDigest)) }),
  label: (i) => ({ ...i, seq: Number(i.seq) - 1 }),
  'checkpoint-entry': (i) => ({ ...i, metaJson: '{"source":"input","step":5}' }),
  'pending-write': (i) => ({ ...i, valueJson: '"forged"' }),
  effect: (i) => ({ ...i, result: { receipt: 'forged' } }),
};

/** What a case tampers with: a stored key, its stream, and the stream swaps come from. */
export interface Target {
  id: string;
  stream: string;
  twin: string;
}

/** The key of the same kind at the same place in the twin stream, if any. */
const twinOf = (inv: Inventory, kind: StorageKind, target: Target): string | undefined => {
  const mine = keysOfKind(inv, kind).filter(inStream(target.stream));
  const theirs = keysOfKind(inv, kind).filter(inStream(target.twin));
  const at = mine.indexOf(target.id);
  return at < 0 ? undefined : theirs[at];
};

/**
 * Applies `mutation` to the stored item `target.id` of `kind` (a record id or an object key)
 * with `t`, from the world's final inventory (and its early one for rollbacks). Answers what
 * it did, or undefined when the world holds nothing to do it with.
 */
export const mutate = async (
  t: Tamperer,
  kind: StorageKind,
  target: Target,
  mutation: Mutation,
): Promise<string | undefined> => {
  const { final } = t.world;
  const { id } = target;
  const same = (inv: Inventory) => ofStream(inv, kind, target.stream);
  if (kind.store === 'records') {
    const item = final.records.get(id) as Item;
    const key = { pk: item.pk, sk: item.sk };
    switch (mutation) {
      case 'edit': {
        const edit = EDITS[kind.name];
        if (!edit) throw new Error(`no edit for ${kind.name}`);
        await t.putRecord(edit(item));
        return `edited ${id}`;
      }
      case 'swap-stream': {
        const twin = twinOf(final, kind, target);
        const other = final.records.get(twin ?? '');
        if (!other) return undefined;
        await t.putRecord({ ...other, ...key });
        return `${twin} put at ${id}`;
      }
      case 'swap-seq': {
        const others = same(final).filter((k) => k !== id);
        const other = final.records.get(others.at(-1) ?? '');
        if (!other) return undefined;
        await t.putRecord({ ...other, ...key });
        return `${others.at(-1)} put at ${id}`;
      }
      case 'delete':
        await t.deleteRecord(key);
        return `deleted ${id}`;
      case 'rollback':
        return rollback(t, kind, target.stream);
    }
  }
  const body = final.objects.get(id) as Uint8Array;
  switch (mutation) {
    case 'edit':
      await t.putObject(id, flipLast(body));
      return `flipped the last byte of ${id}`;
    case 'swap-stream': {
      const twin = twinOf(final, kind, target);
      const other = final.objects.get(twin ?? '');
      if (!other) return undefined;
      await t.putObject(id, other);
      return `${twin} put at ${id}`;
    }
    case 'swap-seq': {
      const others = same(final).filter((k) => k !== id);
      const other = final.objects.get(others.at(-1) ?? '');
      if (!other) return undefined;
      await t.putObject(id, other);
      return `${others.at(-1)} put at ${id}`;
    }
    case 'delete':
      await t.deleteObject(id);
      return `deleted ${id}`;
    case 'rollback':
      return rollback(t, kind, target.stream);
  }
};

/**
 * The records or objects of `kind` in S as the early backup held them, put back where they
 * differ now or are gone; for the head, the whole partition of S as backed up, and the
 * objects written since deleted: a restore no hash chain can see.
 */
const rollback = async (
  t: Tamperer,
  kind: StorageKind,
  stream: string,
): Promise<string | undefined> => {
  const { final, early } = t.world;
  const mine = inStream(stream);
  if (kind.name === 'head') {
    for (const [id, item] of final.records) {
      if (mine(id) && !early.records.has(id)) await t.deleteRecord(item);
    }
    for (const [id, item] of early.records) if (mine(id)) await t.putRecord(item);
    for (const key of final.objects.keys()) {
      if (mine(key) && !early.objects.has(key)) await t.deleteObject(key);
    }
    for (const [key, body] of early.objects) if (mine(key)) await t.putObject(key, body);
    return `the partition of ${stream} restored from the early backup`;
  }
  const older = ofStream(early, kind, stream);
  const restored: string[] = [];
  for (const id of older) {
    if (kind.store === 'records') {
      const was = early.records.get(id) as Item;
      if (JSON.stringify(final.records.get(id)) === JSON.stringify(was)) continue;
      await t.putRecord(was);
    } else {
      const was = early.objects.get(id) as Uint8Array;
      const now = final.objects.get(id);
      if (now && Buffer.from(now).equals(Buffer.from(was))) continue;
      await t.putObject(id, was);
    }
    restored.push(id);
  }
  return restored.length === 0 ? undefined : `restored ${restored.join(', ')}`;
};
