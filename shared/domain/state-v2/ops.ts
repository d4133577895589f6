import type { JsonValue } from '../canonical.js';
import { InvalidInputError } from '../errors.js';
import { isHexHash } from '../hashing.js';
import type { VNode } from './types.js';

/**
 * Ops of a v2 delta: v1's set / delete, plus a set whose value was uploaded first as chunks
 * and is named by its v2 hash (docs/state-v2.md, "Large values"):
 *
 *   {"op":"set","path":"/doc","ref":{"hash":"<64 hex>","size":<canonical bytes>}}
 *
 * `hash` is the value's v2 node hash (its root chunk's key), `size` its canonical JSON size,
 * so the service checks its limit before reading a chunk. The recorded delta keeps the ref,
 * not the value: it stays small, and hydration resolves it from the same chunks.
 */

export interface ChunkRef {
  hash: string;
  size: number;
}

export type StateOp =
  | { op: 'set'; path: string; value: JsonValue }
  | { op: 'set'; path: string; ref: ChunkRef }
  | { op: 'delete'; path: string };

/** A value read from verified chunks (read.ts), handed to one op; `taken` once adopted. */
export interface ResolvedValue {
  node: VNode;
  taken?: boolean;
}

export type ResolveRef = (ref: ChunkRef) => ResolvedValue | undefined;

export const isRefOp = (op: StateOp): op is { op: 'set'; path: string; ref: ChunkRef } =>
  op.op === 'set' && 'ref' in op;

/** The refs of a delta, in op order (each resolved once per op). */
export const refsOf = (ops: readonly StateOp[]): ChunkRef[] =>
  ops.filter(isRefOp).map((o) => o.ref);

/**
 * Checks the shape of v2 ops (as v1's checkOps, plus refs): a set has exactly one of value
 * and ref; a ref names a hash and a size within `maxValueBytes`.
 */
export const checkStateOps = (ops: unknown, maxValueBytes: number): StateOp[] => {
  if (!Array.isArray(ops) || ops.length === 0)
    throw new InvalidInputError('ops must be a non-empty array');
  for (const [i, op] of ops.entries()) {
    const o = op as Partial<{ op: string; path: unknown; value: unknown; ref: unknown }>;
    if (typeof o?.path !== 'string') throw new InvalidInputError(`op ${i}: path must be a string`);
    if (o.op === 'delete') continue;
    const hasValue = 'value' in o && o.value !== undefined;
    const hasRef = 'ref' in o && o.ref !== undefined;
    if (o.op !== 'set' || hasValue === hasRef) {
      throw new InvalidInputError(
        `op ${i}: must be {op:"set",path,value}, {op:"set",path,ref} or {op:"delete",path}`,
      );
    }
    if (hasRef) {
      const ref = o.ref as Partial<ChunkRef>;
      if (!isHexHash(ref?.hash) || !Number.isSafeInteger(ref.size) || (ref.size as number) < 1) {
        throw new InvalidInputError(`op ${i}: ref must be {hash: 64 hex, size: bytes}`);
      }
      if ((ref.size as number) > maxValueBytes) {
        throw new InvalidInputError(`op ${i}: a value may be at most ${maxValueBytes} bytes`);
      }
    }
  }
  return ops as StateOp[];
};
