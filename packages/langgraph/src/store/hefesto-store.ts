import {
  canonicalBytes,
  checkClientOptions,
  HefestoClient,
  INLINE_BUDGET_BYTES,
  type Json,
  pickByRef,
  type ValueRef,
} from '@hefesto/client';
import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from '@langchain/langgraph-checkpoint';
import { literalPrefix, namespacePage, passes } from './matching.js';
import { namespaceOf, namespacePrefix, namespaceStream } from './namespace-ids.js';
import type { Change, NamespaceState, StoredItem } from './namespace-state.js';
import { itemPath } from './namespace-state.js';
import { NamespaceStreams } from './namespace-streams.js';
import {
  embedDocuments,
  embedQuery,
  rank,
  type StoreIndexConfig,
  StoreIndexMissingError,
  textsOf,
} from './vectors.js';

export interface HefestoStoreOptions {
  baseUrl?: string;
  apiKey?: string;
  /** A client of your own (instead of baseUrl/apiKey). */
  client?: HefestoClient;
  /** First part of every namespace's stream id (letters, digits, `-`). Default `lgs`. */
  prefix?: string;
  /** Semantic search: the embeddings and the fields to embed (vectors.ts). */
  index?: StoreIndexConfig;
  /**
   * TTL (a Hefesto extension, as LangGraph Python's store has it): `defaultTtl` minutes for
   * puts that name none; `refreshOnRead` (default true): a get or search that returns an item
   * with a TTL moves its expiry to now + its TTL. Expired items are never served, and the
   * compactor deletes them (each checkpoint's `expiry` hint; docs/langgraph.md, "TTL").
   */
  ttl?: { defaultTtl?: number; refreshOnRead?: boolean };
  /** A value whose JSON is over this many bytes is stored by ref. Default 192 KiB. */
  largeValueBytes?: number;
  /** The clock of createdAt, updatedAt and expiry (ms). Default Date.now. */
  clock?: { now(): number };
  /** Namespace states held for conditional reads. Default 1000. */
  maxHeldNamespaces?: number;
}

/** A put with this store's extension: `ttl` in minutes (null: never expires). */
export type HefestoPutOperation = PutOperation & { ttl?: number | null };

const MINUTE = 60_000;
/** The directory's stream is `{prefix}._dir`: no namespace's id (those end with `.`). */
const DIRECTORY = '_dir';
const PAGE = 100;
const READS_IN_FLIGHT = 4;
/** Namespaces added to the directory at most per read (#backfill). */
const BACKFILL_MAX = 100;

const mapLimit = async <T, R>(xs: T[], f: (x: T) => Promise<R>): Promise<R[]> => {
  const out: R[] = new Array(xs.length);
  let next = 0;
  const worker = async () => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await f(xs[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, xs.length) }, worker));
  return out;
};

interface Candidate {
  stream: string;
  ns: string[];
  key: string;
  stored: StoredItem;
}

/**
 * LangGraph's long-term memory (`BaseStore`) on Hefesto: one stream per namespace, whose
 * state holds its items, so every item served is read from a state the chain binds
 * (docs/langgraph.md, "The store"). A search's states are read as tuples, which a client with
 * `verify` checks against the chain; a `get` is a path read (`client.getValue`), served from
 * the server's verified state and not checked by the client, even with `verify`. It answers
 * what LangGraph's InMemoryStore answers: the same items, filters, order, pages and namespaces
 * (test/langgraph-store/store-differential.test.ts).
 *
 * @example
 * ```ts
 * const store = new HefestoStore({ baseUrl: 'http://localhost:8787', apiKey });
 * await store.put(['users', 'ana'], 'prefs', { theme: 'dark' });
 * const item = await store.get(['users', 'ana'], 'prefs');
 * const graph = builder.compile({ checkpointer: saver, store });
 * ```
 */
export class HefestoStore extends BaseStore {
  readonly client: HefestoClient;
  readonly #prefix: string;
  readonly #index: StoreIndexConfig | undefined;
  readonly #ttl: { defaultTtl?: number; refreshOnRead: boolean };
  readonly #largeValueBytes: number;
  readonly #clock: { now(): number };
  readonly #streams: NamespaceStreams;
  readonly #directory: string;
  #last = 0;

  constructor(options: HefestoStoreOptions) {
    super();
    if (!options.client) checkClientOptions(options, 'HefestoStore (or pass `client`)');
    this.client =
      options.client ??
      new HefestoClient({ baseUrl: options.baseUrl as string, apiKey: options.apiKey });
    this.#prefix = options.prefix ?? 'lgs';
    // One id part: a `.` in it would make one store's namespaces another's.
    if (!/^[A-Za-z0-9][A-Za-z0-9-]{0,31}$/.test(this.#prefix)) {
      throw new Error(
        `HefestoStore: prefix must be letters, digits and '-' (at most 32), got ${JSON.stringify(this.#prefix)}`,
      );
    }
    this.#index = options.index;
    this.#ttl = { ...options.ttl, refreshOnRead: options.ttl?.refreshOnRead ?? true };
    this.#largeValueBytes = options.largeValueBytes ?? INLINE_BUDGET_BYTES;
    this.#clock = options.clock ?? { now: () => Date.now() };
    this.#streams = new NamespaceStreams(this.client, options.maxHeldNamespaces ?? 1000);
    this.#directory = `${this.#prefix}.${DIRECTORY}`;
  }

  /** As BaseStore's, with `ttl` (minutes; null: none) for this item. */
  override async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options: { ttl?: number | null } = {},
  ): Promise<void> {
    validateNamespace(namespace);
    const op: HefestoPutOperation = { namespace, key, value, index };
    if (options.ttl !== undefined) op.ttl = options.ttl;
    await this.batch([op]);
  }

  /** As BaseStore's, with `refreshTtl` (default the store's `ttl.refreshOnRead`) for this read. */
  override async get(
    namespace: string[],
    key: string,
    options: { refreshTtl?: boolean } = {},
  ): Promise<Item | null> {
    validateNamespace(namespace, { allowEmpty: true, allowReservedRoot: true });
    const op: GetOperation & { refreshTtl?: boolean } = { namespace, key };
    if (options.refreshTtl !== undefined) op.refreshTtl = options.refreshTtl;
    return (await this.batch([op]))[0] as Item | null;
  }

  /** As InMemoryStore's: reads answer the state before the batch's puts, applied last. */
  async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const reads: Array<Promise<unknown>> = [];
    const puts = new Map<string, HefestoPutOperation>();
    for (const op of operations) {
      if ('namespace' in op) validateNamespace(op.namespace, { allowReservedRoot: true });
      if ('value' in op) {
        puts.set(JSON.stringify([op.namespace, op.key]), op); // unambiguous: keys may hold ':'
        reads.push(Promise.resolve(null));
      } else if ('key' in op) reads.push(this.#get(op));
      else if ('namespacePrefix' in op) reads.push(this.#search(op));
      else reads.push(this.#listNamespaces(op));
    }
    const results = await Promise.all(reads);
    if (puts.size > 0) await this.#put([...puts.values()]);
    return results as OperationResults<Op>;
  }

  /**
   * Deletes the expired items of every namespace under `prefix` now (one write per namespace
   * that has some), by this store's clock; the compactor does it on its own schedule.
   */
  async sweep(prefix: string[] = []): Promise<number> {
    let removed = 0;
    for (const { stream } of await this.#namespaces(prefix)) {
      // `make` runs again on each lost race: only the last attempt's purge is what was written.
      let purged = 0;
      await this.#streams.write(stream, (state) => {
        const change = this.#purge(state, { items: new Map(), held: [] });
        purged = change.items.size;
        return change.items.size > 0 ? change : null;
      });
      removed += purged;
    }
    return removed;
  }

  /** A strictly increasing ms clock: the order of namespaces and items in this process. */
  #stamp(): number {
    this.#last = Math.max(this.#clock.now(), this.#last + 1);
    return this.#last;
  }

  #live(s: StoredItem): boolean {
    return s.x === undefined || s.x > this.#clock.now();
  }

  async #item(ns: string[], key: string, s: StoredItem): Promise<Item> {
    // A copy: the held state must stay what the chain holds, whatever the caller does with it.
    const value = (s.r ? await this.client.readValue(s.r) : structuredClone(s.v)) as Record<
      string,
      unknown
    >;
    const item: Item = {
      value,
      key,
      namespace: ns,
      createdAt: new Date(s.c),
      updatedAt: new Date(s.u),
    };
    return item;
  }

  async #get(op: GetOperation & { refreshTtl?: boolean }): Promise<Item | null> {
    const stream = namespaceStream(this.#prefix, op.namespace);
    const read = await this.#streams.readPath(stream, itemPath(op.key));
    const s = read?.value as StoredItem | undefined;
    if (!s || !this.#live(s)) return null;
    const item = await this.#item(op.namespace, op.key, s);
    if (s.t !== undefined && (op.refreshTtl ?? this.#ttl.refreshOnRead)) {
      await this.#refresh(stream, [op.key]);
    }
    return item;
  }

  async #search(op: SearchOperation): Promise<SearchItem[]> {
    if (op.namespacePrefix.length > 0) {
      validateNamespace(op.namespacePrefix, { allowReservedRoot: true });
    }
    if (op.query !== undefined && op.query !== '' && !this.#index) {
      throw new StoreIndexMissingError();
    }
    const streams = (await this.#namespaces(op.namespacePrefix)).map((n) => n.stream);
    const states = await mapLimit(streams, (s) => this.#streams.read(s));
    const spaces = streams
      .map((stream, i) => ({ stream, state: states[i] ?? null }))
      .filter((x): x is { stream: string; state: NamespaceState } => x.state !== null)
      .sort((a, b) => a.state.c - b.state.c || (a.stream < b.stream ? -1 : 1));
    const candidates: Candidate[] = [];
    for (const { stream, state } of spaces) {
      const items = Object.entries(state.items)
        .filter(([, s]) => this.#live(s))
        .sort(([, a], [, b]) => a.o - b.o);
      for (const [key, stored] of items) {
        if (stored.r === undefined && !passes(stored.v as Record<string, unknown>, op.filter)) {
          continue;
        }
        candidates.push({ stream, ns: state.ns, key, stored });
      }
    }
    // A value by ref is read (its chunks) to be filtered; inline ones were filtered above.
    const filtered: Candidate[] = [];
    for (const c of candidates) {
      if (c.stored.r && op.filter) {
        const v = (await this.client.readValue(c.stored.r)) as Record<string, unknown>;
        if (!passes(v, op.filter)) continue;
      }
      filtered.push(c);
    }
    const offset = op.offset ?? 0;
    const limit = op.limit ?? 10;
    const page =
      op.query && this.#index
        ? rank(
            filtered.map((item) => ({ item, vectors: Object.values(item.stored.e ?? {}) })),
            await embedQuery(this.#index.embeddings, op.query),
            offset,
            limit,
          )
        : filtered.slice(offset, offset + limit).map((item) => ({ item, score: undefined }));
    const out = await Promise.all(
      page.map(async ({ item: c, score }) => ({
        ...(await this.#item(c.ns, c.key, c.stored)),
        score,
      })),
    );
    if (this.#ttl.refreshOnRead) {
      const byStream = new Map<string, string[]>();
      for (const { item: c } of page) {
        if (c.stored.t !== undefined)
          byStream.set(c.stream, [...(byStream.get(c.stream) ?? []), c.key]);
      }
      await Promise.all([...byStream].map(([stream, keys]) => this.#refresh(stream, keys)));
    }
    return out;
  }

  async #listNamespaces(op: ListNamespacesOperation): Promise<string[][]> {
    const found = await this.#namespaces(literalPrefix(op.matchConditions));
    const all = await mapLimit(found, async ({ stream, ns, listed }) => {
      // Named by the directory but not listed: a tampered list, or a put that stopped between
      // its directory write and its namespace's (then there is no such namespace). Its state says.
      if (ns && listed) return ns;
      const state = await this.#streams.read(stream);
      return state === null ? null : (ns ?? state.ns);
    });
    return namespacePage(
      all.filter((ns): ns is string[] => ns !== null),
      op,
    );
  }

  /**
   * The namespaces under `prefix`: those the directory names (its state, read conditionally
   * and bound to its chain, with their labels), then those only the stream list names
   * (namespaces a store made before the directory existed). `listed`: the stream list names
   * it too. A list entry removed cannot hide a namespace the directory names.
   */
  async #namespaces(
    prefix: string[],
  ): Promise<Array<{ stream: string; ns: string[] | null; listed: boolean }>> {
    const idPrefix = namespacePrefix(this.#prefix, prefix);
    const [directory, listed] = await Promise.all([
      this.#streams.read(this.#directory),
      this.#listStreams(prefix),
    ]);
    const inList = new Set(listed);
    const out: Array<{ stream: string; ns: string[] | null; listed: boolean }> = [];
    const named = new Set<string>();
    for (const [stream, entry] of Object.entries(directory?.items ?? {})) {
      if (!stream.startsWith(idPrefix)) continue;
      named.add(stream);
      out.push({ stream, ns: entry.v as string[], listed: inList.has(stream) });
    }
    const unnamed = listed.filter((stream) => !named.has(stream));
    for (const stream of unnamed) {
      out.push({ stream, ns: namespaceOf(this.#prefix, stream), listed: true });
    }
    if (unnamed.length > 0) await this.#backfill(unnamed.slice(0, BACKFILL_MAX));
    return out;
  }

  /**
   * Names in the directory the namespaces only the stream list names (made by a store before
   * the directory existed), so that a list entry removed later cannot hide them: their states
   * are read (a listed stream without one, or whose state is not a namespace, is not added),
   * then one conditional directory write adds those it does not name yet (#enlist: nothing
   * when another worker added them first). At most BACKFILL_MAX per read, so a read's work is
   * bounded; the rest on the next. Best effort: a read answers the same without it (a key
   * that may not write, a lost race), and the next read tries again.
   */
  #names(ns: unknown, stream: string): boolean {
    try {
      return Array.isArray(ns) && namespaceStream(this.#prefix, ns as string[]) === stream;
    } catch {
      return false;
    }
  }

  async #backfill(streams: string[]): Promise<void> {
    try {
      const states = await mapLimit(streams, (s) => this.#streams.read(s));
      const found = streams
        .map((stream, i) => ({ stream, ns: states[i]?.ns }))
        .filter((x): x is { stream: string; ns: string[] } => this.#names(x.ns, x.stream));
      await this.#enlist(found);
    } catch {
      // Left for the next read: what this one answers does not depend on it.
    }
  }

  /**
   * Names in the directory the namespaces of a put that will make their streams, before they
   * are made (one checkpoint of the directory for all of them; none when it names them
   * already), so no namespace exists that the directory does not name. A put that stops after
   * it leaves a name without a stream: reads check the state of a name the stream list does
   * not have.
   */
  async #enlist(streams: Array<{ stream: string; ns: string[] }>): Promise<void> {
    if (streams.length === 0) return;
    await this.#streams.write(this.#directory, (dir) => {
      const fresh = streams.filter(({ stream }) => dir?.items[stream] === undefined);
      if (fresh.length === 0) return null;
      const stamp = this.#stamp();
      const change: Change = { items: new Map(), held: [] };
      if (!dir) change.create = { ns: [], c: stamp, n: 0, items: {} };
      let n = dir?.n ?? 0;
      for (const { stream, ns } of fresh) {
        change.items.set(stream, { v: ns, c: stamp, u: stamp, o: n++ });
      }
      change.n = n;
      return change;
    });
  }

  async #listStreams(prefix: string[]): Promise<string[]> {
    const idPrefix = namespacePrefix(this.#prefix, prefix);
    const out: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.client.listStreams({ prefix: idPrefix, after, limit: PAGE });
      for (const s of page.streams) if (s.streamId.endsWith('.')) out.push(s.streamId);
      if (page.next === null) return out;
      after = page.next;
    }
  }

  /** Moves the expiry of the items read that have a TTL (one write per namespace). */
  async #refresh(stream: string, keys: string[]): Promise<void> {
    await this.#streams.write(stream, (state) => {
      const change: Change = { items: new Map(), held: [] };
      const now = this.#clock.now();
      for (const key of keys) {
        const s = state?.items[key];
        if (s?.t === undefined || !this.#live(s)) continue;
        change.items.set(key, { ...s, x: now + s.t });
      }
      return change.items.size > 0 ? change : null;
    });
  }

  /** Adds the deletion of the state's expired items to `change`. */
  #purge(state: NamespaceState | null, change: Change): Change {
    for (const [key, s] of Object.entries(state?.items ?? {})) {
      if (!this.#live(s) && !change.items.has(key)) change.items.set(key, null);
    }
    return change;
  }

  async #put(ops: HefestoPutOperation[]): Promise<void> {
    const vectors = await this.#embed(ops);
    const byStream = new Map<
      string,
      { ns: string[]; created: number; ops: HefestoPutOperation[] }
    >();
    for (const op of ops) {
      const stream = namespaceStream(this.#prefix, op.namespace);
      const group = byStream.get(stream);
      if (group) group.ops.push(op);
      else byStream.set(stream, { ns: op.namespace, created: this.#stamp(), ops: [op] });
    }
    // The states are read first (a write would read them anyway): a namespace not made yet
    // is named in the directory before its stream is made.
    const unknown = [...byStream.keys()].filter((s) => this.#streams.known(s) === undefined);
    await mapLimit(unknown, (s) => this.#streams.read(s));
    await this.#enlist(
      [...byStream]
        .filter(([stream]) => this.#streams.known(stream) === null)
        .map(([stream, group]) => ({ stream, ns: group.ns })),
    );
    await Promise.all(
      [...byStream].map(async ([stream, group]) => {
        const refs = await this.#byRef(group.ops);
        const stamp = this.#stamp();
        await this.#streams.write(stream, (state) => {
          const change: Change = { items: new Map(), held: [] };
          let n = state?.n ?? 0;
          if (!state) change.create = { ns: group.ns, c: group.created, n: 0, items: {} };
          for (const op of group.ops) {
            if (op.value === null) {
              change.items.set(op.key, null);
              continue;
            }
            const was = change.items.get(op.key) ?? state?.items[op.key];
            const live = was && this.#live(was) ? was : undefined;
            const ref = refs.get(op);
            const item: StoredItem = {
              ...(ref
                ? { r: { hash: ref.hash, size: ref.size } }
                : { v: structuredClone(op.value) as Json }),
              c: live?.c ?? stamp,
              u: stamp,
              o: live?.o ?? n++,
            };
            const ttl = op.ttl === undefined ? this.#ttl.defaultTtl : op.ttl;
            if (ttl !== undefined && ttl !== null) {
              item.t = Math.round(ttl * MINUTE);
              item.x = this.#clock.now() + item.t;
            }
            const e = vectors.get(op);
            if (e) item.e = e;
            change.items.set(op.key, item);
          }
          change.n = n;
          const named = new Set(Object.values(state?.items ?? {}).map((s) => s.r?.hash));
          change.held = [...refs.values()].filter((r) => !named.has(r.hash));
          return this.#purge(state, change);
        });
      }),
    );
  }

  /** The values of one namespace's puts that go by ref, uploaded as chunks. */
  async #byRef(ops: HefestoPutOperation[]): Promise<Map<HefestoPutOperation, ValueRef>> {
    const withValue = ops.filter((op) => op.value !== null);
    const sizes = withValue.map((op) => canonicalBytes(op.value as Json));
    const refs = new Map<HefestoPutOperation, ValueRef>();
    for (const i of pickByRef(sizes, this.#largeValueBytes, INLINE_BUDGET_BYTES)) {
      const op = withValue[i] as HefestoPutOperation;
      refs.set(op, await this.client.putValue(op.value as Json));
    }
    return refs;
  }

  /** The index vectors of each put, by field path (one embedDocuments call per batch). */
  async #embed(
    ops: HefestoPutOperation[],
  ): Promise<Map<HefestoPutOperation, Record<string, number[]>>> {
    const out = new Map<HefestoPutOperation, Record<string, number[]>>();
    if (!this.#index) return out;
    const fields = this.#index.fields ?? ['$'];
    const wanted = ops
      .filter((op) => op.value !== null && op.index !== false)
      .map((op) => ({ op, texts: textsOf(op.value, Array.isArray(op.index) ? op.index : fields) }));
    const unique = [...new Set(wanted.flatMap((w) => w.texts.map(([, t]) => t)))];
    if (unique.length === 0) return out;
    const embedded = await embedDocuments(this.#index.embeddings, unique);
    const dims = this.#index.dims;
    if (embedded.length !== unique.length || (dims && embedded.some((v) => v.length !== dims))) {
      throw new Error(
        `the index's embeddings answered ${embedded.length} vectors for ${unique.length} texts` +
          (dims ? ` (each must have ${dims} dimensions)` : ''),
      );
    }
    const vectorOf = new Map(unique.map((t, i) => [t, embedded[i] as number[]]));
    for (const { op, texts } of wanted) {
      if (texts.length === 0) continue;
      out.set(
        op,
        Object.fromEntries(texts.map(([path, t]) => [path, vectorOf.get(t) as number[]])),
      );
    }
    return out;
  }
}
