import { labelKey, pendingWriteSk, streamPk } from '../chain/storage-keys.js';
import { bindingOf, leavesOf } from '../chain/writes-binding.js';
import type { JsonValue } from '../domain/canonical.js';
import { ContentSealedError, InvalidFormatError, TamperedLedgerError } from '../domain/errors.js';
import { WRITES_EVENT, type WritesPayload } from '../domain/pending-writes.js';
import { openContent, sealContent } from '../domain/privacy/content-seal.js';
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

/** The storage kind named in a sealed pending write's AAD (docs/privacy.md, Decision 4). */
export const PENDING_WRITE_KIND = 'pending-write';

/**
 * A write's record (the direct path, and the commit of a `hefesto.writes` event). On a
 * stream sealed at rest (`contentKey`: the stream's k_e) the value is stored sealed
 * (`valueSealed`, base64 of content-seal.ts's form) under an AAD binding tenant, stream,
 * kind and the record's sk, so a sealed value moved to another write, stream or tenant does
 * not open. Task ids and paths, the channel, idx and a ref's hash stay in the clear
 * (docs/privacy.md, "What stays in the clear").
 */
export const writeItem = (
  tenant: string,
  stream: string,
  label: string,
  task: { taskId: string; taskPath: string },
  w: PendingWriteInput,
  contentKey?: Uint8Array,
): Item => {
  const sk = pendingWriteSk(label, task.taskPath, task.taskId, w.idx);
  const json = w.ref ? undefined : JSON.stringify(w.value);
  return {
    pk: streamPk(tenant, stream),
    sk,
    taskId: task.taskId,
    taskPath: task.taskPath,
    idx: w.idx,
    channel: w.channel,
    ...(w.ref
      ? { refHash: w.ref.hash, refSize: w.ref.size }
      : contentKey
        ? {
            valueSealed: sealContent(
              contentKey,
              { tenant, stream, kind: PENDING_WRITE_KIND, place: sk },
              Buffer.from(json as string, 'utf8'),
              { compress: (json as string).length >= 2048 },
            ).toString('base64'),
          }
        : { valueJson: json as string }),
  };
};

/**
 * A stored write's value: `valueJson` in the clear, `valueSealed` opened with the stream's
 * content key (none: ContentSealedError, 503; does not open: ErrTamperedLedger naming it).
 * `contentKey` is given for a sealed stream only, where a value in the clear is planted.
 */
export const writeValueOf = (
  item: Item,
  at: { tenant: string; stream: string; seq: number; contentKey?: Uint8Array },
): JsonValue => {
  if (typeof item.valueSealed !== 'string') {
    if (at.contentKey) {
      // a sealed stream's writes are all sealed (a ref aside): one in the clear was planted
      throw new TamperedLedgerError(
        Math.max(1, at.seq),
        `pending write ${item.sk} is stored in the clear on a stream sealed at rest`,
      );
    }
    // As text (see labels.ts: DynamoDB maps refuse empty keys); `value` in older records.
    return (
      typeof item.valueJson === 'string' ? JSON.parse(item.valueJson) : (item.value ?? null)
    ) as JsonValue;
  }
  if (!at.contentKey) throw new ContentSealedError(`the pending writes of stream ${at.stream}`);
  const place = { tenant: at.tenant, stream: at.stream, kind: PENDING_WRITE_KIND, place: item.sk };
  try {
    const plain = openContent(at.contentKey, place, Buffer.from(item.valueSealed, 'base64'));
    return JSON.parse(plain.toString('utf8')) as JsonValue;
  } catch (err) {
    if (!(err instanceof InvalidFormatError) && !(err instanceof SyntaxError)) throw err;
    throw new TamperedLedgerError(
      Math.max(1, at.seq),
      `pending write ${item.sk} does not open under the stream's key`,
      { cause: err },
    );
  }
};

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
  contentKey?: Uint8Array,
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
        ops.push({
          kind: 'put',
          item: writeItem(tenant, stream, binding.label, p, w, contentKey),
        });
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
