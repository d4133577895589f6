import type { JsonValue } from '../domain/canonical.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../domain/errors.js';
import { MAX_VALUE_BYTES, verifyChunk } from '../domain/state-v2/index.js';
import type { Clock } from '../ports/clock.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import type { ChunkStore } from './chunk-store.js';
import { fenceError, leaseGuard } from './leases.js';
import type { Reader } from './reader.js';
import { labelKey, pad16, pendingWriteSk, streamPk, writesPrefix } from './storage-keys.js';

/**
 * Pending writes attached to a checkpoint label (LangGraph's `putWrites`): the writes of the
 * tasks of the superstep after that checkpoint, kept until the next checkpoint supersedes
 * them. Records in the stream's partition (docs/records-v2.md):
 *
 *   sk = pw#{label}#{task}#{pad10(idx + 2^31)}   task = base64url(SHA-256(taskPath NUL taskId))[0, 16)
 *
 * Task paths and ids are any strings (LangGraph's task paths hold spaces and commas, the
 * validation suite's task ids underscores), so they enter the key as 96 bits of a digest of
 * both (no write can form another record's key); the record holds them as they are, and
 * `list` sorts in memory into LangGraph's `writesSortKey` order (task path, task id, idx) by
 * code points (the order of their UTF-8 bytes). A label's writes are read whole anyway.
 *
 * Records written before (h14) have the longer key `pw#{label}#{hex(taskPath)}#{hex(taskId)}#
 * {pad16(idx + 2^31)}` (~200 bytes a write, more than most values); `list` reads both. A write
 * stored under the old key and retried under the new one is the same write: `list` keeps one
 * (the old for idx >= 0, insert-once; the new for negative idx, last wins).
 *
 * Each write is its own conditional put: `notExists` for idx >= 0 (insert-once: a retry of
 * the same writes, or a stale worker's, changes nothing), unconditional for the negative
 * indexes of special channels (errors, interrupts: last wins). So a retried call is
 * exactly-once without an idempotency key. Deleted with the stream.
 *
 * Fenced like every other write: each put is a transaction with the stream's lease guard
 * (the writer's epoch when it sends one, else "no exclusive lease held now"), so a worker
 * that lost its lease cannot add writes to a checkpoint its successor runs from.
 *
 * A large value goes by reference (`ref: {hash, size}`, uploaded first with PUT /v1/chunks,
 * as a checkpoint's set op does; docs/state-v2.md, "Large values"): before its record is
 * written, the stream's reference `{stream}#value#{hash}` is put (the chunk GC keeps every
 * chunk it reaches until the stream is deleted, as for a checkpoint's ref) and the value's
 * root chunk must be stored and be that chunk (else 400, nothing written). The record keeps
 * the ref; a read answers it as sent, and the client reads the value from the chunks,
 * checking each against its hash (a large value never travels inside one request or answer).
 */

export const MAX_TASK_BYTES = 200;
export const MAX_WRITES_PER_CALL = 100;
const IDX_OFFSET = 2 ** 31;

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

export interface PendingWrite extends PendingWriteInput {
  taskId: string;
  taskPath: string;
}

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');

const checkTask = (value: string, what: string) => {
  if (Buffer.byteLength(value, 'utf8') > MAX_TASK_BYTES) {
    throw new InvalidInputError(`${what} must be at most ${MAX_TASK_BYTES} bytes of UTF-8`);
  }
};

/** The sort key of a write: what the key of records written before was (its order). */
const sortKey = (w: PendingWrite) =>
  `${hex(w.taskPath)}#${hex(w.taskId)}#${pad16(w.idx + IDX_OFFSET)}`;

/** The old key's task part is hex: `{hex}#{hex}#{16 digits}` after the label's prefix. */
const isOldKey = (sk: string, label: string) =>
  /^[0-9a-f]*#[0-9a-f]*#\d{16}$/.test(sk.slice(writesPrefix(label).length));

const toWrite = (item: Item): PendingWrite => ({
  taskId: String(item.taskId),
  taskPath: String(item.taskPath),
  idx: Number(item.idx),
  channel: String(item.channel),
  ...(typeof item.refHash === 'string'
    ? { ref: { hash: item.refHash, size: Number(item.refSize) } }
    : {
        // As text (see labels.ts: DynamoDB maps refuse empty keys); `value` in older records.
        value: (typeof item.valueJson === 'string'
          ? JSON.parse(item.valueJson)
          : (item.value ?? null)) as JsonValue,
      }),
});

export class PendingWrites {
  constructor(
    readonly deps: {
      records: RecordStore;
      reader: Reader;
      clock: Clock;
      /** The tenant's chunks, for writes by ref (none: such a write is refused). */
      chunks?: ChunkStore;
      maxValueBytes?: number;
    },
  ) {}

  /** A write by ref: its chunks held for the stream, its root chunk stored (see above). */
  async #holdRef(tenant: string, stream: string, idx: number, ref: PendingWriteRef) {
    const { chunks, maxValueBytes = MAX_VALUE_BYTES } = this.deps;
    if (!Number.isSafeInteger(ref.size) || ref.size < 1 || ref.size > maxValueBytes) {
      throw new InvalidInputError(`write ${idx}: a value may be at most ${maxValueBytes} bytes`);
    }
    if (!chunks) throw new InvalidInputError(`write ${idx}: this server stores no chunks`);
    await chunks.addRef(tenant, { stream, kind: 'value', id: ref.hash, digest: ref.hash });
    const root = await chunks.source(tenant)(ref.hash);
    try {
      if (root === undefined) throw new Error('its root chunk is not stored');
      verifyChunk(root, ref.hash);
    } catch (err) {
      throw new InvalidInputError(
        `write ${idx}: value ${ref.hash}: ${(err as Error).message} (upload its chunks first)`,
      );
    }
  }

  /** The stream must exist (not deleted) and hold the label. */
  async #checkLabel(tenant: string, stream: string, label: string): Promise<void> {
    await this.deps.reader.head(tenant, stream);
    if (!(await this.deps.records.get(labelKey(tenant, stream, label)))) {
      throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
    }
  }

  async put(
    tenant: string,
    stream: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: PendingWriteInput[] },
    fence?: number,
  ): Promise<{ written: number }> {
    checkTask(task.taskId, 'taskId');
    checkTask(task.taskPath, 'taskPath');
    if (task.writes.length > MAX_WRITES_PER_CALL) {
      throw new InvalidInputError(`at most ${MAX_WRITES_PER_CALL} writes per call`);
    }
    const idxs = new Set(task.writes.map((w) => w.idx));
    if (idxs.size !== task.writes.length) throw new InvalidInputError('idx must be unique');
    for (const w of task.writes) {
      if ((w.value === undefined) === (w.ref === undefined)) {
        throw new InvalidInputError(`write ${w.idx} takes exactly one of value and ref`);
      }
    }
    await this.#checkLabel(tenant, stream, label);
    for (const w of task.writes) if (w.ref) await this.#holdRef(tenant, stream, w.idx, w.ref);
    const { records } = this.deps;
    const pk = streamPk(tenant, stream);
    const outcomes = await Promise.all(
      task.writes.map(async (w) => {
        const item: Item = {
          pk,
          sk: pendingWriteSk(label, task.taskPath, task.taskId, w.idx),
          taskId: task.taskId,
          taskPath: task.taskPath,
          idx: w.idx,
          channel: w.channel,
          ...(w.ref
            ? { refHash: w.ref.hash, refSize: w.ref.size }
            : { valueJson: JSON.stringify(w.value) }),
        };
        const now = this.deps.clock.now();
        const guard = leaseGuard(
          tenant,
          stream,
          fence === undefined ? undefined : { epoch: fence, checkpoint: false },
          now,
        );
        const conditions = w.idx < 0 ? [] : [{ op: 'notExists' as const }];
        try {
          await records.transact([{ kind: 'put', item, conditions }, guard]);
          return 1;
        } catch (err) {
          if (!(err instanceof ConflictError)) throw err;
          if (err.index === 1)
            throw fenceError(err.current as Item | undefined, { epoch: fence }, now);
          return 0; // written before: insert-once
        }
      }),
    );
    return { written: outcomes.reduce<number>((a, b) => a + b, 0) };
  }

  /** Every pending write of the label, in (task path, task id, idx) order. */
  async list(tenant: string, stream: string, label: string): Promise<PendingWrite[]> {
    await this.#checkLabel(tenant, stream, label);
    const found: Array<{ write: PendingWrite; key: string; old: boolean }> = [];
    let after: string | undefined;
    do {
      const page = await this.deps.records.query(streamPk(tenant, stream), {
        skPrefix: writesPrefix(label),
        after,
        limit: 1000,
      });
      for (const item of page.items) {
        const write = toWrite(item);
        found.push({ write, key: sortKey(write), old: isOldKey(item.sk, label) });
      }
      after = page.next;
    } while (after !== undefined);
    // Code-point order of the keys' parts (hex of UTF-8 sorts like the bytes), then one write
    // per key: the one stored first for idx >= 0, the newer for negative idx.
    found.sort((a, b) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : a.old === b.old ? 0 : a.old ? -1 : 1,
    );
    const out: PendingWrite[] = [];
    for (let i = 0; i < found.length; i++) {
      const f = found[i] as (typeof found)[number];
      const next = found[i + 1];
      if (next?.key === f.key) {
        out.push(f.write.idx >= 0 ? f.write : next.write);
        i++;
        continue;
      }
      out.push(f.write);
    }
    return out;
  }
}
