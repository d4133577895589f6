import type { HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { labelKey, pad16, streamPk, writesPrefix } from '../chain/storage-keys.js';
import { checkWrites } from '../chain/writes-binding.js';
import {
  type PendingWriteInput,
  type PendingWriteRef,
  writeItem,
  writeValueOf,
} from '../commit/writes-ops.js';
import { ConflictError, InvalidInputError, NotFoundError, PrunedError } from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import { MAX_VALUE_BYTES, verifyChunk } from '../domain/state-v2/index.js';
import { fenceError, leaseGuard } from '../leases/leases.js';
import type { Clock } from '../ports/clock.js';
import {
  type Item,
  MAX_TRANSACT_OPS,
  type RecordStore,
  type TransactOp,
} from '../ports/record-store.js';
import type { ChunkStore } from './chunk-store.js';

export type { PendingWriteInput, PendingWriteRef } from '../commit/writes-ops.js';

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
 * A call's writes are one transaction (more only past 98 writes or 3 MiB of items, counted in
 * UTF-8 bytes as DynamoDB counts them), each write a conditional put in it: `notExists` for
 * idx >= 0 (insert-once: a retry of the same writes, or a stale worker's, changes nothing; a
 * write stored before fails its condition, the call's writes are read, and the transaction is
 * made again without every one stored: a retry is two transactions, more only if another
 * writer adds some of them meanwhile), unconditional for the negative indexes of special
 * channels (errors, interrupts: last wins). So a retried call is exactly-once without an
 * idempotency key. Deleted with the stream.
 *
 * Fenced like every other write: the transaction holds the stream's lease guard
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
 *
 * Bound to the chain (frozen-writes.ts, docs/ledger-format.md "Pending writes"): the commit
 * that moves the head's state off a labelled checkpoint freezes it (`writesFrozen` on its
 * label record) and the next commit commits the digest of its writes; a write takes the
 * direct path above only while its label record is not frozen (a condition of its
 * transaction), and a write to a frozen checkpoint is a `hefesto.writes` event whose commit
 * writes the records. `list` checks what it serves against the binding (writes-binding.ts).
 */

export const MAX_TASK_BYTES = 200;

/** Puts per transaction: a transaction also holds the lease guard and the label's check. */
const PUTS_PER_TRANSACTION = MAX_TRANSACT_OPS - 2;
/**
 * Bytes of items per transaction, under DynamoDB's 4 MB for one transaction's items (the lease
 * guard and the label's check are a few hundred bytes more).
 */
const BYTES_PER_TRANSACTION = 3 * 1024 * 1024;

/**
 * An item's size as DynamoDB counts it: each attribute's name and value in UTF-8 bytes (a
 * number at most 21 bytes). A value's text is its UTF-8 bytes, not its UTF-16 length: CJK
 * text is three bytes a character.
 */
const itemBytes = (item: Item): number => {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    if (value === undefined) continue;
    bytes += Buffer.byteLength(name, 'utf8');
    bytes +=
      typeof value === 'string'
        ? Buffer.byteLength(value, 'utf8')
        : typeof value === 'number'
          ? 21
          : Buffer.byteLength(JSON.stringify(value), 'utf8');
  }
  return bytes;
};

/** A write and its record. */
interface PutOf {
  write: PendingWriteInput;
  item: Item;
}

/**
 * A call's puts in as few transactions as the store's limits allow: one for the writes
 * LangGraph sends (a few per task), more only past 98 writes or 3 MiB of items.
 */
const transactionsOf = (puts: readonly PutOf[]): PutOf[][] => {
  const parts: PutOf[][] = [];
  let part: PutOf[] = [];
  let bytes = 0;
  for (const put of puts) {
    const size = itemBytes(put.item);
    if (
      part.length === PUTS_PER_TRANSACTION ||
      (part.length > 0 && bytes + size > BYTES_PER_TRANSACTION)
    ) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(put);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
};

export const MAX_WRITES_PER_CALL = 100;
const IDX_OFFSET = 2 ** 31;

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

/** How a stored write's value is opened: its stream, and the content key when sealed. */
export interface WritesOpening {
  tenant: string;
  stream: string;
  seq: number;
  contentKey?: Uint8Array;
}

const toWrite = (item: Item, opening: WritesOpening): PendingWrite => ({
  taskId: String(item.taskId),
  taskPath: String(item.taskPath),
  idx: Number(item.idx),
  channel: String(item.channel),
  ...(typeof item.refHash === 'string'
    ? { ref: { hash: item.refHash, size: Number(item.refSize) } }
    : {
        value: writeValueOf(item, opening),
      }),
});

/**
 * The writes of `label` among its records, in (task path, task id, idx) order, one per key:
 * code-point order of the keys' parts (hex of UTF-8 sorts like the bytes), and of a write
 * stored under both keys the one stored first for idx >= 0, the newer for negative idx.
 */
export const mergeWrites = (
  items: readonly Item[],
  label: string,
  opening: WritesOpening,
): PendingWrite[] => {
  const found = items.map((item) => {
    const write = toWrite(item, opening);
    return { write, key: sortKey(write), old: isOldKey(item.sk, label) };
  });
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
};

/** Every stored write of the label, merged (as stored: not checked). */
export const readWrites = async (
  records: RecordStore,
  tenant: string,
  stream: string,
  label: string,
  /** The stream's content key when it is sealed at rest (Reader.sealedKeys), and its seq. */
  sealed: { seq: number; contentKey?: Uint8Array },
): Promise<PendingWrite[]> => {
  const items: Item[] = [];
  let after: string | undefined;
  do {
    const page = await records.query(streamPk(tenant, stream), {
      skPrefix: writesPrefix(label),
      after,
      limit: 1000,
    });
    items.push(...page.items);
    after = page.next;
  } while (after !== undefined);
  return mergeWrites(items, label, { tenant, stream, ...sealed });
};

/** Where writes to a frozen checkpoint go (frozen-writes.ts); answers how many it stored. */
export interface LateWrites {
  append(
    tenant: string,
    stream: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: PendingWriteInput[] },
    fence?: number,
  ): Promise<number>;
}

export class PendingWrites {
  constructor(
    readonly deps: {
      records: RecordStore;
      reader: Reader;
      clock: Clock;
      /** The tenant's chunks, for writes by ref (none: such a write is refused). */
      chunks?: ChunkStore;
      maxValueBytes?: number;
      /** Writes to frozen checkpoints (none: refused with 409, for tests of the records). */
      late?: LateWrites;
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

  async #labelRecord(tenant: string, stream: string, label: string): Promise<Item> {
    const record = await this.deps.records.get(labelKey(tenant, stream, label));
    if (!record) throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
    return record;
  }

  /** The stream must exist (not deleted) and hold the label: its head and label record. */
  async #checkLabel(
    tenant: string,
    stream: string,
    label: string,
  ): Promise<{ head: HeadRecord; record: Item }> {
    const head = await this.deps.reader.head(tenant, stream);
    const record = await this.deps.records.get(labelKey(tenant, stream, label));
    if (!record) throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
    return { head, record };
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
    const { head, record } = await this.#checkLabel(tenant, stream, label);
    // A stream sealed at rest stores its writes' values sealed (refused when the key
    // cannot be opened: never written in the clear).
    const contentKey = (await this.deps.reader.sealedKeys(tenant, stream, head))?.keys.content;
    for (const w of task.writes) if (w.ref) await this.#holdRef(tenant, stream, w.idx, w.ref);
    const frozen = record.writesFrozen !== undefined;
    let written = 0;
    const late: PendingWriteInput[] = frozen ? [...task.writes] : [];
    if (!frozen) {
      const puts = task.writes.map((w) => ({
        write: w,
        item: writeItem(tenant, stream, label, task, w, contentKey),
      }));
      for (const part of transactionsOf(puts)) {
        const outcome = await this.#putTogether(tenant, stream, label, part, fence);
        if (outcome === 'frozen') late.push(...part.map((p) => p.write));
        else written += outcome;
      }
    }
    if (late.length > 0) {
      if (!this.deps.late) throw new ConflictError(`checkpoint ${label} is frozen`);
      written += await this.deps.late.append(
        tenant,
        stream,
        label,
        { ...task, writes: late },
        fence,
      );
    }
    return { written };
  }

  /**
   * The direct path: one transaction of the writes' puts, the lease guard and the label
   * record not frozen. Answers how many it wrote (a write with idx >= 0 stored before is
   * insert-once: its condition fails, the part's insert-once writes are read, and the
   * transaction is made again without every one stored: a retry after a lost reply costs two
   * transactions, not one a write), or 'frozen': a commit left the checkpoint meanwhile, the
   * writes go through the ledger.
   */
  async #putTogether(
    tenant: string,
    stream: string,
    label: string,
    writes: readonly PutOf[],
    fence?: number,
  ): Promise<number | 'frozen'> {
    const now = this.deps.clock.now();
    const guard = leaseGuard(
      tenant,
      stream,
      fence === undefined ? undefined : { epoch: fence, checkpoint: false },
      now,
    );
    const unfrozen: TransactOp = {
      kind: 'check',
      key: labelKey(tenant, stream, label),
      conditions: [{ op: 'exists' }, { op: 'attrNotExists', attr: 'writesFrozen' }],
    };
    let puts: Array<TransactOp & { kind: 'put' }> = writes.map(({ write, item }) => ({
      kind: 'put',
      item,
      conditions: write.idx < 0 ? [] : [{ op: 'notExists' as const }],
    }));
    while (puts.length > 0) {
      try {
        await this.deps.records.transact([...puts, guard, unfrozen]);
        return puts.length;
      } catch (err) {
        if (!(err instanceof ConflictError) || err.index === undefined) throw err;
        if (err.index === puts.length) {
          throw fenceError(err.current as Item | undefined, { epoch: fence }, now);
        }
        if (err.index === puts.length + 1) {
          if (err.current === undefined) {
            throw new NotFoundError(`stream ${stream} has no checkpoint labelled ${label}`);
          }
          return 'frozen';
        }
        // Written before (insert-once): so may the others be (a retried call), all read at
        // once; the transaction goes again without the ones stored (and the refused one).
        const refused = err.index;
        const isStored = async (p: (typeof puts)[number], i: number) => {
          if (i === refused) return true;
          if (p.conditions?.length === 0) return false; // last wins: always put
          return (await this.deps.records.get({ pk: p.item.pk, sk: p.item.sk })) !== undefined;
        };
        const stored = await Promise.all(puts.map(isStored));
        puts = puts.filter((_, i) => !stored[i]);
      }
    }
    return 0;
  }

  /**
   * Every pending write of the label, in (task path, task id, idx) order, checked against
   * the event that binds them (writes-binding.ts) before they are served.
   */
  async list(
    tenant: string,
    stream: string,
    label: string,
    /** What the caller read already: the head, and verified events checks may use. */
    known?: { head: HeadRecord; events: LedgerEvent[] },
  ): Promise<PendingWrite[]> {
    const { head, record } = known
      ? { head: known.head, record: await this.#labelRecord(tenant, stream, label) }
      : await this.#checkLabel(tenant, stream, label);
    // A checkpoint at or below the pruning point is gone with its delta (as GET of it is).
    if (Number(record.seq) <= (head.prunedSeq ?? 0))
      throw new PrunedError(stream, head.prunedSeq ?? 0);
    const keys = await this.deps.reader.sealedKeys(tenant, stream, head);
    const writes = await readWrites(this.deps.records, tenant, stream, label, {
      seq: head.seq,
      contentKey: keys?.keys.content,
    });
    const claim = { label, record, head, writes, known: known?.events };
    await checkWrites(this.deps.reader, tenant, stream, claim);
    return writes;
  }
}
