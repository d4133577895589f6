import { labelKey, pendingWriteSk, streamPk } from '../chain/storage-keys.js';
import { bindingOf, leavesOf } from '../chain/writes-binding.js';
import type { JsonValue } from '../domain/canonical.js';
import { WRITES_EVENT, type WritesPayload } from '../domain/pending-writes.js';
import type { Item, TransactOp } from '../ports/record-store.js';

/** A value uploaded as chunks: its v2 hash and canonical size. */
export interface PendingWriteRef {
  hash: string;
  size: number;
}

/** Exactly one of `value` and `ref`. */
export interface PendingWriteInput {
  idx: number;
  channel: string;
  value?: JsonValue;
  ref?: PendingWriteRef;
}

/** A write's record (the direct path, and the commit of a `hefesto.writes` event). */
export const writeItem = (
  tenant: string,
  stream: string,
  label: string,
  task: { taskId: string; taskPath: string },
  w: PendingWriteInput,
): Item => ({
  pk: streamPk(tenant, stream),
  sk: pendingWriteSk(label, task.taskPath, task.taskId, w.idx),
  taskId: task.taskId,
  taskPath: task.taskPath,
  idx: w.idx,
  channel: w.channel,
  ...(w.ref
    ? { refHash: w.ref.hash, refSize: w.ref.size }
    : { valueJson: JSON.stringify(w.value) }),
});

/**
 * What the commit of an event freezing or binding writes (commit-extras.ts), from its payload
 * alone, so a writer rolling the segment forward writes the same: `writesFrozen` on the label
 * record of the checkpoint a delta leaves, `writesSeq` on the one whose writes it binds, and
 * for a `hefesto.writes` event its writes' records.
 */
export const bindingOps = (
  tenant: string,
  stream: string,
  events: ReadonlyArray<{ seq: number; type: string; payload: () => unknown }>,
): TransactOp[] => {
  const ops: TransactOp[] = [];
  for (const event of events) {
    const payload = event.payload();
    const leaves = leavesOf({ type: event.type, payload });
    if (leaves !== undefined) {
      ops.push({
        kind: 'update',
        key: labelKey(tenant, stream, leaves),
        update: { set: { writesFrozen: event.seq } },
      });
    }
    const binding = bindingOf({ type: event.type, payload });
    if (!binding) continue;
    if (event.type === WRITES_EVENT) {
      const p = payload as WritesPayload;
      for (const w of Array.isArray(p.writes) ? p.writes : []) {
        ops.push({ kind: 'put', item: writeItem(tenant, stream, binding.label, p, w) });
      }
    }
    ops.push({
      kind: 'update',
      key: labelKey(tenant, stream, binding.label),
      update: { set: { writesSeq: event.seq } },
    });
  }
  return ops;
};
