import { canonicalJson, type JsonValue } from './canonical.js';
import { sha256Hex } from './hashing.js';

/**
 * The digest that binds a checkpoint's pending writes to the chain (docs/ledger-format.md,
 * "Pending writes"; vectors: test/vectors/pending-writes.json). Pure, so the client SDK
 * computes exactly what the server commits:
 *
 *   digest = hex(SHA-256(UTF-8("hefesto/pending-writes/v1\n") ‖ JCS(list)))
 *   list   = the writes sorted by task path, then task id (both by code point, i.e. by their
 *            UTF-8 bytes: LangGraph's writesSortKey order), then idx ascending, each as
 *            {taskPath, taskId, idx, channel, value} or, for a value sent by ref,
 *            {taskPath, taskId, idx, channel, ref: {hash, size}} (the ref, not its chunks:
 *            those are checked against their hash when read)
 *
 * No writes at all is the digest of `[]`: a label bound with none notices one added later.
 */

/** A checkpoint's pending writes are bound by a `hefesto.writes` event once it was left. */
export const WRITES_EVENT = 'hefesto.writes';

const TAG = 'hefesto/pending-writes/v1\n';

export interface DigestedWrite {
  taskId: string;
  taskPath: string;
  idx: number;
  channel: string;
  value?: JsonValue;
  ref?: { hash: string; size: number };
}

const utf8 = new TextEncoder();

/** Code-point order (the order of the strings' UTF-8 bytes; `<` compares UTF-16 units). */
const compareText = (a: string, b: string): number => {
  if (a === b) return 0;
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const d = (x[i] as number) - (y[i] as number);
    if (d !== 0) return d;
  }
  return x.length - y.length;
};

/**
 * LangGraph's writesSortKey order: task path, task id, idx.
 *
 * @example
 * ```ts
 * const ordered = [...writes].sort(compareWrites); // the order the digest and the list use
 * ```
 */
export const compareWrites = (a: DigestedWrite, b: DigestedWrite): number =>
  compareText(a.taskPath, b.taskPath) || compareText(a.taskId, b.taskId) || a.idx - b.idx;

const entryOf = (w: DigestedWrite) => ({
  taskPath: w.taskPath,
  taskId: w.taskId,
  idx: w.idx,
  channel: w.channel,
  ...(w.ref ? { ref: { hash: w.ref.hash, size: w.ref.size } } : { value: w.value ?? null }),
});

/**
 * The digest of a checkpoint's writes (see above), whatever order they are given in.
 *
 * @example
 * ```ts
 * const { writes } = await client.getPendingWrites('run-1', label);
 * const digest = pendingWritesDigest(writes); // what the chain committed for them
 * ```
 */
export const pendingWritesDigest = (writes: readonly DigestedWrite[]): string =>
  sha256Hex(TAG + canonicalJson([...writes].sort(compareWrites).map(entryOf)));

/** A delta's binding of the writes of the checkpoint it moved the head's state off. */
export interface WritesBinding {
  label: string;
  digest: string;
}

/** A `hefesto.writes` event: writes added to a checkpoint after it was left (see docs). */
export interface WritesPayload {
  label: string;
  taskId: string;
  taskPath: string;
  writes: Array<{ idx: number; channel: string; value?: JsonValue; ref?: DigestedWrite['ref'] }>;
  /** The digest of all the label's writes with these. */
  digest: string;
}
