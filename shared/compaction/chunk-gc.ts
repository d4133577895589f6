import {
  chunkGcDueKey,
  chunkGcKey,
  chunkGcListKey,
  chunkKey,
  chunkPrefix,
  headKey,
  snapshotIndexKey,
} from '../chain/storage-keys.js';
import { ConflictError } from '../domain/errors.js';
import { mapLimit } from '../domain/map-limit.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { type ChunkStore, childrenOf } from '../state/chunk-store.js';
import { UPLOAD_STREAM } from '../state/values.js';
import { IO_CONCURRENCY } from './compact-types.js';

/**
 * Chunk garbage collection of one tenant, by references (docs/state-v2.md, "Chunk GC"). A
 * chunk is live when a reference record reaches it (its root and everything below). Two
 * visits, at least the grace apart:
 *
 *   Condemn  C1. Mark: every chunk the references reach (a reference whose root chunk is
 *                missing belongs to a writer in flight: if younger than the grace, stop; if
 *                older, or if its holder is gone, the writer died: reap the reference).
 *            C2. List the tenant's chunks; the unmarked ones are condemned: written to an
 *                object, then named on the GC marker with the time (conditional on `gen`).
 *   Sweep    S1. Marker `gen` + 1 (odd: sweeping), conditional on `gen`. From here no writer
 *                can add a reference (chunk-store.ts `addRef` needs an even, unchanged gen).
 *            S2. Mark again (references added since C1 rescue their chunks).
 *            S3. Delete the condemned chunks not marked.
 *            S4. Marker `gen` + 1 (even), condemned list dropped, its object deleted.
 *
 * A crash after C2 leaves a condemned list the next visit sweeps after the grace; after S1,
 * an odd `gen` that a visit takes over once `sweepAt` is a lease old (writers meanwhile get
 * ErrUnavailable and retry: a base snapshot stays due, a fork is refused with 503); after S3,
 * S4 is all that is left. Deleting twice is harmless. Readers get the grace: a chunk is
 * deleted at least `graceMs` after the visit that first found nothing reaching it.
 */

export type ChunkGcStep = 'chunks-condemned' | 'sweep-started' | 'chunks-deleted' | 'sweep-done';

export interface ChunkGcOptions {
  chunks: ChunkStore;
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  graceMs: number;
  leaseMs: number;
  crash?: (step: ChunkGcStep) => void;
  /** How long an uploaded chunk waits for a checkpoint that references it. Default 1 day. */
  uploadTtlMs?: number;
}

export interface ChunkGcReport {
  phase: 'idle' | 'condemned' | 'waiting' | 'swept' | 'busy' | 'in-flight';
  condemned: number;
  deleted: number;
  refsReaped: number;
}

/** Asks the compactor for a GC visit of the tenant's chunks at `at`. */
export const chunkGcDue = (tenant: string, at: number): Item => ({
  ...chunkGcDueKey(tenant),
  dueAt: at,
});

const num = (v: unknown, fallback = 0) => (typeof v === 'number' ? v : fallback);

export class ChunkCollector {
  constructor(readonly o: ChunkGcOptions) {}

  /** One GC step for the tenant: whichever of condemn and sweep is due. */
  async run(tenant: string): Promise<ChunkGcReport> {
    const { records, clock, graceMs, leaseMs } = this.o;
    const now = clock.now();
    const marker = await records.get(chunkGcKey(tenant));
    const gen = num(marker?.gen);
    const report: ChunkGcReport = { phase: 'idle', condemned: 0, deleted: 0, refsReaped: 0 };
    if (gen % 2 === 1) {
      if (num(marker?.sweepAt) + leaseMs > now) return { ...report, phase: 'busy' };
      return this.#sweep(tenant, marker as Item, report, true);
    }
    if (typeof marker?.condemnedKey === 'string') {
      if (num(marker.condemnedAt) + graceMs > now) return { ...report, phase: 'waiting' };
      return this.#sweep(tenant, marker, report, false);
    }
    return this.#condemn(tenant, marker, report);
  }

  async #condemn(tenant: string, marker: Item | undefined, report: ChunkGcReport) {
    const { objects, records, clock, crash, graceMs } = this.o;
    const live = await this.#mark(tenant, report);
    if (!live) return { ...report, phase: 'in-flight' as const };
    const condemned: string[] = [];
    let after: string | undefined;
    do {
      const page = await objects.list(chunkPrefix(tenant), { after });
      for (const { key } of page.items) {
        const hash = key.slice(chunkPrefix(tenant).length);
        if (!live.has(hash)) condemned.push(hash);
      }
      after = page.next;
    } while (after !== undefined);
    const now = clock.now();
    if (condemned.length === 0) {
      await this.#done(tenant);
      return report;
    }
    const gen = num(marker?.gen);
    const key = chunkGcListKey(tenant, gen, now);
    await objects.putIfAbsent(key, Buffer.from(JSON.stringify(condemned)));
    await records.update(
      chunkGcKey(tenant),
      { set: { gen, condemnedKey: key, condemnedAt: now } },
      {
        conditions: [
          marker
            ? { op: 'eq', attr: 'gen', value: gen }
            : { op: 'any', conditions: [{ op: 'notExists' }, { op: 'eq', attr: 'gen', value: 0 }] },
        ],
      },
    );
    await records.put(chunkGcDue(tenant, now + graceMs + 1));
    crash?.('chunks-condemned');
    return { ...report, phase: 'condemned' as const, condemned: condemned.length };
  }

  async #sweep(tenant: string, marker: Item, report: ChunkGcReport, takeover: boolean) {
    const { objects, records, clock, crash } = this.o;
    const from = num(marker.gen);
    const odd = takeover ? from : from + 1;
    try {
      await records.update(
        chunkGcKey(tenant),
        { set: { gen: odd, sweepAt: clock.now() } },
        {
          conditions: [
            { op: 'eq', attr: 'gen', value: from },
            ...(takeover
              ? [{ op: 'eq' as const, attr: 'sweepAt', value: num(marker.sweepAt) }]
              : []),
          ],
        },
      );
    } catch (err) {
      if (err instanceof ConflictError) return { ...report, phase: 'busy' as const };
      throw err;
    }
    crash?.('sweep-started');
    const key = String(marker.condemnedKey ?? '');
    const live = await this.#mark(tenant, report);
    let deleted = 0;
    if (live && key) {
      const stored = await objects.get(key);
      const condemned = stored ? (JSON.parse(Buffer.from(stored.body).toString()) as string[]) : [];
      const doomed = condemned.filter((h) => !live.has(h));
      await mapLimit(doomed, IO_CONCURRENCY, (h) => objects.delete(chunkKey(tenant, h)));
      deleted = doomed.length;
      crash?.('chunks-deleted');
    }
    // A writer in flight (live undefined) keeps the condemned list for the next visit.
    await records.update(
      chunkGcKey(tenant),
      {
        set: { gen: odd + 1 },
        remove: live ? ['sweepAt', 'condemnedKey', 'condemnedAt'] : ['sweepAt'],
      },
      { conditions: [{ op: 'eq', attr: 'gen', value: odd }] },
    );
    if (live && key) await objects.delete(key);
    if (live) await this.#done(tenant);
    crash?.('sweep-done');
    return { ...report, phase: live ? ('swept' as const) : ('in-flight' as const), deleted };
  }

  /** Clears the tenant's due record unless work was asked for after this visit began. */
  async #done(tenant: string): Promise<void> {
    const { records } = this.o;
    const due = await records.get(chunkGcDueKey(tenant));
    if (!due) return;
    await records
      .delete(chunkGcDueKey(tenant), {
        conditions: [{ op: 'eq', attr: 'dueAt', value: num(due.dueAt) }],
      })
      .catch((err: unknown) => {
        if (!(err instanceof ConflictError)) throw err;
      });
  }

  /** Every chunk the tenant's references reach; undefined while a writer is in flight. */
  async #mark(tenant: string, report: ChunkGcReport): Promise<Set<string> | undefined> {
    const { chunks, clock, graceMs } = this.o;
    const live = new Set<string>();
    let inFlight = false;
    for (const ref of await chunks.refs(tenant)) {
      const digest = String(ref.digest);
      const old = num(ref.createdAt) + graceMs <= clock.now();
      const rootThere = live.has(digest) || (await this.#read(tenant, digest)) !== undefined;
      if (!rootThere || (old && !(await this.#holderExists(tenant, ref)))) {
        if (!old) {
          inFlight = true;
          continue;
        }
        await this.#reap(ref);
        report.refsReaped++;
        continue;
      }
      await this.#walk(tenant, digest, live);
    }
    return inFlight ? undefined : live;
  }

  async #read(tenant: string, hash: string): Promise<Uint8Array | undefined> {
    return (
      this.o.chunks.cache.get(tenant, hash) ??
      (await this.o.objects.get(chunkKey(tenant, hash)))?.body
    );
  }

  /** Marks a tree level by level, each level's chunks read concurrently. */
  async #walk(tenant: string, root: string, live: Set<string>): Promise<void> {
    let level = [root];
    while (level.length > 0) {
      const fresh = [...new Set(level)].filter((h) => !live.has(h));
      for (const h of fresh) live.add(h);
      const kids = await mapLimit(fresh, IO_CONCURRENCY, async (h) => {
        const bytes = await this.#read(tenant, h);
        if (!bytes) return [];
        try {
          return childrenOf(bytes);
        } catch {
          return []; // a tampered chunk names nothing the GC could trust
        }
      });
      level = kids.flat();
    }
  }

  /** Whether what a reference was written for still exists (else its writer died). */
  async #holderExists(tenant: string, ref: Item): Promise<boolean> {
    const [stream, kind, id] = ref.sk.split('#') as [string, string, string];
    if (kind === 'base') {
      return (await this.o.records.get(snapshotIndexKey(tenant, stream, Number(id)))) !== undefined;
    }
    if (kind === 'fork') {
      const head = await this.o.records.get(headKey(tenant, stream));
      return head !== undefined && num(head.seq) >= 1;
    }
    if (stream === UPLOAD_STREAM) {
      return num(ref.createdAt) + (this.o.uploadTtlMs ?? 86_400_000) > this.o.clock.now();
    }
    return (await this.o.records.get(headKey(tenant, stream))) !== undefined;
  }

  async #reap(ref: Item): Promise<void> {
    await this.o.records
      .delete(
        { pk: ref.pk, sk: ref.sk },
        { conditions: [{ op: 'eq', attr: 'createdAt', value: num(ref.createdAt) }] },
      )
      .catch((err: unknown) => {
        if (!(err instanceof ConflictError)) throw err; // written again meanwhile: keep it
      });
  }
}

/**
 * Releases a stream's references (all, or those `drop` picks) and asks for a GC visit. The
 * chunks stay until a visit finds nothing reaching them, and the grace after it.
 */
export const releaseRefs = async (
  deps: { chunks: ChunkStore; records: RecordStore; clock: Clock },
  tenant: string,
  stream: string,
  drop: (kind: string, id: string) => boolean = () => true,
): Promise<number> => {
  let released = 0;
  for (const ref of await deps.chunks.refs(tenant, stream)) {
    const [, kind = '', id = ''] = ref.sk.split('#');
    if (!drop(kind, id)) continue;
    await deps.records.delete({ pk: ref.pk, sk: ref.sk });
    released++;
  }
  if (released > 0) await deps.records.put(chunkGcDue(tenant, deps.clock.now()));
  return released;
};
