import {
  chunkGcDueKey,
  chunkGcKey,
  chunkKey,
  chunkRefsPk,
  type RefKind,
  refSk,
} from '../chain/storage-keys.js';
import { ConflictError, UnavailableError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import { optimistic, RETRY } from '../domain/optimistic.js';
import { type Chunk, type ChunkSource, parseChunk } from '../domain/state-v2/index.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { loopPacer, type Pacer } from './loop-turns.js';
import type { MemoryPool, Reclaimable } from './memory-pool.js';

/**
 * Content-addressed chunks of a tenant (docs/state-v2.md, "Snapshots v2 and chunk GC").
 *
 * - A chunk lives at `t/{tenant}/chunks/{hash}`: shared by every stream and fork of the
 *   tenant, never by two tenants (the tenant is in the key). Put-if-absent: the same key
 *   always holds the same bytes.
 * - A reference record (`pk = t#{tenant}#chunkrefs`, `sk = {stream}#{kind}#{id}`) names one
 *   root digest whose chunks must be kept: a base snapshot (`base`, at its seq), a fork's
 *   origin (`fork`, seq 0) or a value a delta set by ref (`value`, its hash). The compactor
 *   deletes a chunk only when no reference reaches it (chunk-gc.ts).
 * - The tenant's GC marker (`pk = t#{tenant}#chunkgc`, `sk = marker`) holds a generation `gen`:
 *   even while no sweep deletes, odd while one may. A reference is written in a transaction
 *   conditional on an even `gen` (so no sweep is deleting), and when the writer skips chunks it
 *   saw stored, on the very `gen` it saw them under (so no sweep ran since).
 * - The chunk cache holds verified chunk bytes by (tenant, hash), bounded by bytes: a chunk is
 *   its hash, so an entry is right for every stream of the tenant for ever. Its bytes count
 *   in the process's memory pool (memory-pool.ts), which takes them back when requests need
 *   them.
 */

export interface ChunkRefRecord {
  stream: string;
  kind: RefKind;
  id: number | string;
  digest: string;
  /**
   * A value's reference: the seq of the head its checkpoint read (the commit lands after it).
   * A clear's release (clear-cut.ts) deletes only the references held before the clear.
   */
  heldAt?: number;
}

/** What a process knows is stored: the chunks of one state, seen under GC generation `gen`. */
export interface StoredKnowledge {
  gen: number;
  hashes: Set<string>;
}

/** Verified chunk bytes by (tenant, hash), least recently used out first, bounded by bytes. */
export class ChunkCache implements Reclaimable {
  readonly #entries = new Map<string, Uint8Array>();
  #bytes = 0;

  constructor(
    readonly maxBytes = 64 * 1024 * 1024,
    readonly memory?: MemoryPool,
  ) {
    memory?.register(this);
  }

  get bytes(): number {
    return this.#bytes;
  }

  get held(): number {
    return this.#bytes;
  }

  reclaim(bytes: number): void {
    let freed = 0;
    for (const [k, v] of this.#entries) {
      if (freed >= bytes) break;
      this.#entries.delete(k);
      this.#bytes -= v.length;
      freed += v.length;
    }
  }

  get(tenant: string, hash: string): Uint8Array | undefined {
    const key = `${tenant}/${hash}`;
    const hit = this.#entries.get(key);
    if (hit) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
    }
    return hit;
  }

  put(tenant: string, hash: string, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes) return;
    const key = `${tenant}/${hash}`;
    const old = this.#entries.get(key);
    if (old) this.#bytes -= old.length;
    this.#entries.delete(key);
    this.reclaim(this.#bytes + bytes.length - this.maxBytes);
    if (this.memory && !this.memory.tryHold(this, bytes.length)) return;
    this.#entries.set(key, bytes);
    this.#bytes += bytes.length;
  }
}

export interface ChunkStoreOptions {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  cache?: ChunkCache;
  /** Chunk GETs / PUTs in flight per operation. Default 16. */
  concurrency?: number;
  /** Turns of the event loop between steps of long reads and writes (loop-turns.ts). */
  pacer?: Pacer;
}

/** Parsed children of a chunk (hashes of chunks it names), for the GC walk. */
export const childrenOf = (bytes: Uint8Array): string[] => {
  const parsed = parseChunk(bytes);
  if ('pages' in parsed) return parsed.pages.map((p) => p.toString('hex'));
  if (!('slots' in parsed)) return [];
  return parsed.slots.filter((s) => s.inline === undefined).map((s) => s.hash.toString('hex'));
};

export class ChunkStore {
  readonly #o: Required<ChunkStoreOptions>;
  /** Last GC generation seen per tenant (a guess for the next reference's condition). */
  readonly #gens = new Map<string, number>();

  constructor(options: ChunkStoreOptions) {
    this.#o = {
      cache: new ChunkCache(),
      concurrency: 16,
      ...options,
      pacer: options.pacer ?? loopPacer,
    };
  }

  get cache(): ChunkCache {
    return this.#o.cache;
  }

  get concurrency(): number {
    return this.#o.concurrency;
  }

  /** The event loop's pacer: reads and writes of large states take turns (loop-turns.ts). */
  get pacer(): Pacer {
    return this.#o.pacer;
  }

  /**
   * A source for readState: cache first, else one GET. Fetched bytes are kept in `fetched`
   * and enter the cache only through `remember`, after the read verified them. Each fetch is
   * a step of the event loop's pacer (loop-turns.ts): it waits for a turn when the slice is
   * spent.
   */
  source(tenant: string, fetched?: Map<string, Uint8Array>): ChunkSource {
    const { cache, objects, pacer } = this.#o;
    return pacer.source(async (hash) => {
      const hit = cache.get(tenant, hash);
      if (hit) return hit;
      const stored = await objects.get(chunkKey(tenant, hash));
      if (stored) fetched?.set(hash, stored.body);
      return stored?.body;
    });
  }

  remember(tenant: string, fetched: Map<string, Uint8Array>): void {
    for (const [hash, bytes] of fetched) this.#o.cache.put(tenant, hash, bytes);
  }

  /** The tenant's GC generation now (0 before any GC). */
  async generation(tenant: string): Promise<number> {
    const item = await this.#o.records.get(chunkGcKey(tenant));
    const gen = typeof item?.gen === 'number' ? item.gen : 0;
    this.#gens.set(tenant, gen);
    return gen;
  }

  /**
   * Step 1 of every writer: the reference record, conditional on the GC generation. With
   * `knownGen` (the writer will skip chunks it saw stored under that generation) the
   * condition is that generation exactly: a sweep since then answers `false` and the writer
   * must write without skipping. Without it, any even generation (no sweep deleting). A
   * sweep in progress is `UnavailableError` (retry later). Answers the generation the
   * reference was written under (`undefined`: `knownGen` is stale).
   */
  async addRef(
    tenant: string,
    ref: ChunkRefRecord,
    knownGen?: number,
  ): Promise<number | undefined> {
    const { records, clock } = this.#o;
    let gen = knownGen ?? this.#gens.get(tenant) ?? 0;
    return optimistic<number | undefined>(
      async () => {
        if (gen % 2 === 1) throw new UnavailableError('chunk garbage collection is sweeping');
        const item: Item = {
          pk: chunkRefsPk(tenant),
          sk: refSk(ref.stream, ref.kind, ref.id),
          digest: ref.digest,
          createdAt: clock.now(),
          ...(ref.heldAt === undefined ? {} : { heldAt: ref.heldAt }),
        };
        const condition =
          gen === 0
            ? {
                op: 'any' as const,
                conditions: [
                  { op: 'notExists' as const },
                  { op: 'eq' as const, attr: 'gen', value: 0 },
                ],
              }
            : { op: 'eq' as const, attr: 'gen', value: gen };
        try {
          await records.transact([
            { kind: 'put', item },
            { kind: 'check', key: chunkGcKey(tenant), conditions: [condition] },
          ]);
          this.#gens.set(tenant, gen);
          return gen;
        } catch (err) {
          if (!(err instanceof ConflictError) || err.index !== 1) throw err;
          const current = err.current as Item | undefined;
          gen = typeof current?.gen === 'number' ? current.gen : 0;
          this.#gens.set(tenant, gen);
          // With a generation the caller knows, it decides (its chunks may be gone); else again.
          return knownGen !== undefined ? undefined : RETRY;
        }
      },
      {
        attempts: 3,
        // Only a lost gen check (the transaction's second item) is a race to run again.
        retryOn: () => false,
        exhausted: () => {
          throw new UnavailableError('chunk garbage collection keeps moving');
        },
      },
    );
  }

  async getRef(tenant: string, ref: Omit<ChunkRefRecord, 'digest'>): Promise<Item | undefined> {
    return this.#o.records.get({
      pk: chunkRefsPk(tenant),
      sk: refSk(ref.stream, ref.kind, ref.id),
    });
  }

  /** Releases one reference (its chunks go once no other reference reaches them). */
  async releaseRef(tenant: string, ref: Omit<ChunkRefRecord, 'digest'>): Promise<void> {
    await this.#o.records.delete({
      pk: chunkRefsPk(tenant),
      sk: refSk(ref.stream, ref.kind, ref.id),
    });
  }

  /**
   * A clear's release (clear-cut.ts): deletes the stream's value references held before seq
   * `seq` (`heldAt` below it, or none: written by a pending write or before `heldAt`
   * existed), each on condition it is still so, then asks for a GC visit. A checkpoint that
   * holds the same value again writes its `heldAt` at or past `seq` (it read a head at or past
   * the clear: a commit on an older head fails, the clear changed the state digest), so its
   * write before the delete makes the delete fail, and after it puts the reference back.
   * The base at the clear (written by the cut) keeps what the state there reaches.
   */
  async releaseHeldBefore(tenant: string, stream: string, seq: number): Promise<number> {
    const { records, clock } = this.#o;
    let released = 0;
    for (const ref of await this.refs(tenant, stream)) {
      if (!ref.sk.startsWith(`${stream}#value#`)) continue;
      if (typeof ref.heldAt === 'number' && ref.heldAt >= seq) continue;
      try {
        await records.delete(
          { pk: ref.pk, sk: ref.sk },
          {
            conditions: [
              {
                op: 'any',
                conditions: [
                  { op: 'attrNotExists', attr: 'heldAt' },
                  { op: 'lt', attr: 'heldAt', value: seq },
                ],
              },
            ],
          },
        );
        released++;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err; // held again meanwhile: kept
      }
    }
    if (released > 0) await records.put({ ...chunkGcDueKey(tenant), dueAt: clock.now() });
    return released;
  }

  /** Every reference of a tenant, or of one stream (`stream#` prefix). */
  async refs(tenant: string, stream?: string): Promise<Item[]> {
    const items: Item[] = [];
    let after: string | undefined;
    do {
      const page = await this.#o.records.query(chunkRefsPk(tenant), {
        after,
        limit: 100,
        ...(stream === undefined ? {} : { skPrefix: `${stream}#` }),
      });
      items.push(...page.items);
      after = page.next;
    } while (after !== undefined);
    return items;
  }

  /**
   * Puts chunks (put-if-absent) as they come, `concurrency` at a time, every one but the
   * last, then the last: lists come children first with the root last, so a stored root means
   * a stored tree. Taking them one at a time from a generator (state-v2 `eachChunk`), a
   * writer holds a batch of encoded chunks, not the whole tree, and the encoding takes
   * turns of the event loop (loop-turns.ts).
   */
  async putChunks(
    tenant: string,
    chunks: Iterable<Chunk>,
  ): Promise<{ bytes: number; count: number }> {
    const { objects, cache, concurrency, pacer } = this.#o;
    // A put is a step too: a local store compresses the chunk before it returns.
    const put = async (c: Chunk) => {
      for (let turn = pacer.pause(); turn; turn = pacer.pause()) await turn;
      await objects.putIfAbsent(chunkKey(tenant, c.hash), c.bytes);
      cache.put(tenant, c.hash, c.bytes);
    };
    let bytes = 0;
    let count = 0;
    let held: Chunk | undefined;
    let batch: Chunk[] = [];
    const iterator = chunks[Symbol.iterator]();
    for (;;) {
      for (let turn = pacer.pause(); turn; turn = pacer.pause()) await turn;
      const next = iterator.next();
      if (next.done) break;
      bytes += next.value.bytes.length;
      count++;
      if (held) batch.push(held);
      held = next.value;
      if (batch.length >= concurrency) {
        await mapLimit(batch, concurrency, put);
        batch = [];
      }
    }
    await mapLimit(batch, concurrency, put);
    if (held) await put(held);
    return { bytes, count };
  }
}
