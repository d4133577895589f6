import type { JsonValue } from '../domain/canonical.js';
import { InvalidInputError, NotFoundError, TamperedLedgerError } from '../domain/errors.js';
import type { DeltaOp } from '../domain/state.js';
import {
  boundedSource,
  type ChunkRef,
  MAX_CHUNK_BYTES,
  MAX_VALUE_BYTES,
  readValue,
  verifyChunk,
} from '../domain/state-v2/index.js';
import type { ObjectStore } from '../ports/object-store.js';
import { type ChunkStore, chunkKey } from './chunk-store.js';

/**
 * Large values (docs/state-v2.md, "Large values"): a value up to `maxValueBytes` (64 MiB by
 * default) travels as chunks of at most 1 MiB, uploaded one request each, then a checkpoint
 * op names it by reference: `{op:"set", path, ref:{hash, size}}`.
 *
 * - An upload is checked against its key alone (a chunk is its hash), written put-if-absent
 *   under the tenant, after an upload reference (`~upload#value#{hash}`: stream ids cannot
 *   start with `~`) that keeps it from the GC for `uploadTtlMs`.
 * - A checkpoint with refs reads each value (verified, canonical, its size as declared), puts
 *   the stream's reference `{stream}#value#{hash}` before committing (released with the
 *   stream), and records the ref, not the value: the delta stays small and hydration reads
 *   the value from the same chunks. Base snapshots store the state as chunks, which the value
 *   already is, so no object ever holds the whole value.
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
   * The ops with every ref replaced by its value, read from the tenant's chunks. `hold`: the
   * stream's references to the values are put first (a checkpoint, before its commit).
   */
  async resolve(
    tenant: string,
    ops: readonly DeltaOp[],
    options: { hold?: string; seq?: number } = {},
  ): Promise<DeltaOp[]> {
    const out: DeltaOp[] = [];
    for (const [i, op] of ops.entries()) {
      if (!isRef(op)) {
        out.push(op);
        continue;
      }
      const { hash, size } = op.ref;
      if (!Number.isSafeInteger(size) || size < 1 || size > this.maxValueBytes) {
        throw new InvalidInputError(`op ${i}: a value may be at most ${this.maxValueBytes} bytes`);
      }
      if (options.hold !== undefined) {
        const ref = { stream: options.hold, kind: 'value' as const, id: hash, digest: hash };
        await this.chunks.addRef(tenant, ref);
      }
      const source = boundedSource(this.chunks.source(tenant), this.chunks.concurrency);
      let value: JsonValue;
      try {
        const { node } = await readValue(hash, source, { seq: options.seq });
        if (node.size !== size)
          throw new InvalidInputError(`op ${i}: the value is ${node.size} bytes, not ${size}`);
        value = node.value;
      } catch (err) {
        // Before a commit a missing or bad chunk is the caller's (upload it first); replaying a
        // recorded delta it is tampering, which readValue already says.
        if (options.hold !== undefined && err instanceof TamperedLedgerError) {
          throw new InvalidInputError(`op ${i}: ${err.message} (upload the value's chunks first)`);
        }
        throw err;
      }
      out.push({ op: 'set', path: op.path, value });
    }
    return out;
  }
}
