import { chunkKey } from '../chain/storage-keys.js';
import {
  InvalidDeltaError,
  InvalidFormatError,
  InvalidInputError,
  NotFoundError,
  TamperedLedgerError,
  UnavailableError,
} from '../domain/errors.js';
import type { DeltaOp } from '../domain/state.js';
import {
  boundedSource,
  type ChunkRef,
  type ChunkSource,
  checkBudget,
  type Extent,
  MAX_CHUNK_BYTES,
  MAX_VALUE_BYTES,
  measureValue,
  memoryOf,
  NO_EXTENT,
  plus,
  type ResolvedValue,
  type ResolveRef,
  readValue,
  type VerifiedChunk,
  verifyChunk,
  type WorkBudget,
} from '../domain/state-v2/index.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { ChunkStore } from './chunk-store.js';
import type { MemoryAccount } from './memory-pool.js';

/**
 * Large values (docs/state-v2.md, "Large values"): a value up to `maxValueBytes` (64 MiB by
 * default) travels as chunks of at most 1 MiB, uploaded one request each, then a checkpoint
 * op names it by reference: `{op:"set", path, ref:{hash, size}}`.
 *
 * - An upload is checked against its key alone (a chunk is its hash), written put-if-absent
 *   under the tenant, after an upload reference (`~upload#value#{hash}`: stream ids cannot
 *   start with `~`) that keeps it from the GC for `uploadTtlMs`.
 * - A checkpoint with refs measures each value from its chunks (its logical size, against
 *   the work budget, before building any of it), reads it (verified, canonical, its size as
 *   declared), and only once the new state is computed puts the stream's reference
 *   `{stream}#value#{hash}` (released with the stream, or by the checkpoint if its commit
 *   fails), then commits. The delta records the ref, not the value: it stays small and
 *   hydration reads the value from the same chunks. Base snapshots store the state as
 *   chunks, which the value already is, so no object ever holds the whole value.
 */

export const UPLOAD_STREAM = '~upload';
/** One chunk as uploaded: its bytes (a chunk is at most MAX_CHUNK_BYTES, plus its framing). */
export const MAX_UPLOAD_BYTES = MAX_CHUNK_BYTES + 64;

const isRef = (op: unknown): op is { op: 'set'; path: string; ref: ChunkRef } =>
  typeof op === 'object' && op !== null && (op as { op?: unknown }).op === 'set' && 'ref' in op;

export const hasRefs = (ops: readonly unknown[]): boolean => ops.some(isRef);

export class ValueStore {
  constructor(
    readonly chunks: ChunkStore,
    readonly objects: ObjectStore,
    readonly maxValueBytes = MAX_VALUE_BYTES,
  ) {}

  /** Stores one uploaded chunk (idempotent); refused unless its bytes hash to `hash`. */
  async putChunk(tenant: string, hash: string, bytes: Uint8Array): Promise<{ size: number }> {
    if (bytes.length > MAX_UPLOAD_BYTES) {
      throw new InvalidInputError(`a chunk is at most ${MAX_UPLOAD_BYTES} bytes`);
    }
    try {
      verifyChunk(bytes, hash);
    } catch (err) {
      throw new InvalidInputError(`the bytes are not the chunk ${hash}: ${(err as Error).message}`);
    }
    await this.chunks.addRef(tenant, {
      stream: UPLOAD_STREAM,
      kind: 'value',
      id: hash,
      digest: hash,
    });
    await this.objects.putIfAbsent(chunkKey(tenant, hash), bytes);
    return { size: bytes.length };
  }

  async getChunk(tenant: string, hash: string): Promise<Uint8Array> {
    const stored = await this.objects.get(chunkKey(tenant, hash));
    if (!stored) throw new NotFoundError(`no chunk ${hash}`);
    return stored.body;
  }

  /**
   * Step 1 of setting values by ref (a checkpoint, or replaying a recorded delta): every ref's
   * extent, measured from its chunks before any of it is built (the dedup bomb is refused
   * here, in as many steps as it has distinct chunks). `held`: what the request already holds
   * (the state the values go into), counted against `budget` with them. `client`: the refs
   * come from a request, so a chunk that is not stored, or a tree that is not canonical, is
   * the caller's (ErrInvalidDelta naming the op and the chunk); replaying a recorded delta it
   * is tampering at `seq`. What reading them will hold is charged to `memory`.
   */
  async measureRefs(
    tenant: string,
    ops: readonly DeltaOp[],
    options: {
      budget: WorkBudget;
      held?: Extent;
      client?: boolean;
      seq?: number;
      /** The request's share of the process's memory: reading the values is charged to it. */
      memory?: MemoryAccount;
    },
  ): Promise<MeasuredRefs> {
    // The GC generation before any chunk is read: a reference put later under the same
    // generation proves no sweep ran in between (chunk-store.ts addRef with knownGen).
    const gen = options.client ? await this.chunks.generation(tenant) : undefined;
    const verified = new Map<string, VerifiedChunk>();
    const source = this.#source(tenant);
    const byHash = new Map<string, Extent>();
    let total: Extent = options.held ?? NO_EXTENT;
    for (const [i, op] of ops.entries()) {
      if (!isRef(op)) continue;
      const { hash, size } = op.ref;
      if (!Number.isSafeInteger(size) || size < 1 || size > this.maxValueBytes) {
        throw new InvalidInputError(`op ${i}: a value may be at most ${this.maxValueBytes} bytes`);
      }
      let extent = byHash.get(hash);
      if (extent === undefined) {
        extent = await this.#asOp(i, options.client, () =>
          measureValue(hash, source, {
            pause: this.chunks.pacer.pause,
            verified,
            budget: options.budget,
            held: total,
            what: `op ${i}'s ref ${hash} with the state it goes into`,
            seq: options.seq,
            ...(options.client ? { missing: missingChunk(i, hash) } : {}),
          }),
        );
        if (extent.bytes !== size) {
          throw new InvalidInputError(`op ${i}: the value is ${extent.bytes} bytes, not ${size}`);
        }
        byHash.set(hash, extent);
      }
      total = plus(total, extent);
      checkBudget(total, options.budget, `the values op ${i} and the ops before it set by ref`);
    }
    const held = options.held ?? NO_EXTENT;
    const extent = { nodes: total.nodes - held.nodes, bytes: total.bytes - held.bytes };
    // Reading them (step 2) builds every distinct value once, then copies each repeat.
    await options.memory?.charge(memoryOf(extent));
    return {
      extent,
      byHash,
      verified,
      gen,
      client: options.client === true,
      seq: options.seq,
    };
  }

  /**
   * Step 2: each measured value read from its chunks (those step 1 verified are neither
   * fetched nor verified again), as a resolver for MerkleState.apply: the first op naming a
   * value adopts its tree, later ones copy it.
   */
  async readRefs(tenant: string, ops: readonly DeltaOp[], measured: MeasuredRefs) {
    const source = this.#source(tenant);
    const { verified } = measured;
    const values = new Map<string, ResolvedValue>();
    for (const [i, op] of ops.entries()) {
      if (!isRef(op) || values.has(op.ref.hash)) continue;
      const { hash, size } = op.ref;
      const resolved = await this.#asOp(i, measured.client, () =>
        readValue(hash, source, { seq: measured.seq, pause: this.chunks.pacer.pause, verified }),
      );
      if (resolved.node.size !== size) {
        throw new InvalidInputError(
          `op ${i}: the value is ${resolved.node.size} bytes, not ${size}`,
        );
      }
      values.set(hash, resolved);
    }
    verified.clear();
    return {
      resolve: ((ref: ChunkRef) => values.get(ref.hash)) as ResolveRef,
      extentOf: (ref: ChunkRef) => measured.byHash.get(ref.hash) ?? NO_EXTENT,
    };
  }

  /**
   * Step 3, a checkpoint's, after its state is computed and just before its commit: the
   * stream's reference to each value it sets by ref (held already too), put on the GC
   * generation step 1 read the chunks under (a sweep since then: 503, retry). `release` takes
   * back the ones put here that were not there, for a commit that did not happen; a process
   * that dies in between leaves them to the GC, which reaps a value reference whose stream
   * has no head after the grace. `heldAt`: the seq of the head the checkpoint read (0: none),
   * kept on each reference (a session clear releases those below it, clear-cut.ts).
   */
  async hold(
    tenant: string,
    stream: string,
    measured: MeasuredRefs,
    heldAt: number,
  ): Promise<{ release(): Promise<void> }> {
    const put: string[] = [];
    const release = async () => {
      for (const hash of put) {
        await this.chunks.releaseRef(tenant, { stream, kind: 'value', id: hash }).catch(() => {});
      }
    };
    try {
      for (const hash of measured.byHash.keys()) {
        const ref = { stream, kind: 'value' as const, id: hash, digest: hash, heldAt };
        // Written again when it exists too: `heldAt` moves, so a clear's release of the
        // reference (clear-cut.ts, conditional on an older `heldAt`) loses to this hold.
        const existed = (await this.chunks.getRef(tenant, ref)) !== undefined;
        const gen = await this.chunks.addRef(tenant, ref, measured.gen ?? 0);
        if (!existed) put.push(hash);
        if (gen === undefined) {
          throw new UnavailableError('chunk garbage collection ran while the values were read');
        }
      }
    } catch (err) {
      await release();
      throw err;
    }
    return { release };
  }

  /** A source through the chunk cache, its fetches bounded and paced (chunk-store.ts). */
  #source(tenant: string): ChunkSource {
    return boundedSource(this.chunks.source(tenant), this.chunks.concurrency);
  }

  /** Errors of a client's ref as the caller's (the op named), else as they are. */
  async #asOp<T>(i: number, client: boolean | undefined, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (!client || !(err instanceof InvalidFormatError || err instanceof TamperedLedgerError)) {
        throw err;
      }
      const why =
        err instanceof TamperedLedgerError ? err.message.replace(/^[^:]*: /, '') : err.message;
      throw new InvalidDeltaError(i, `its ref is not a value stored as chunks: ${why}`);
    }
  }
}

export interface MeasuredRefs {
  /** Every op's value, an op naming a value twice counting it twice. */
  extent: Extent;
  byHash: Map<string, Extent>;
  /** Chunks step 1 fetched and verified, for step 2 (cleared by it). */
  verified: Map<string, VerifiedChunk>;
  /** The GC generation read before the chunks were (client refs). */
  gen: number | undefined;
  client: boolean;
  seq: number | undefined;
}

const missingChunk =
  (i: number, ref: string) =>
  (chunk: string): never => {
    throw new InvalidDeltaError(
      i,
      `its ref ${ref} needs chunk ${chunk}, which is not stored: upload the value's chunks first`,
      { chunk },
    );
  };
