import type { JsonValue } from '../domain/canonical.js';
import { ConflictError, InvalidInputError, NotFoundError } from '../domain/errors.js';
import type { Item, RecordStore } from '../ports/record-store.js';
import { labelKey } from './labels.js';
import { pad16, streamPk } from './layout.js';
import type { Reader } from './reader.js';

/**
 * Pending writes attached to a checkpoint label (LangGraph's `putWrites`): the writes of the
 * tasks of the superstep after that checkpoint, kept until the next checkpoint supersedes
 * them. Records in the stream's partition (docs/records-v2.md):
 *
 *   sk = pw#{label}#{hex(taskPath)}#{hex(taskId)}#{pad16(idx + 2^31)}
 *
 * Task paths and ids are any strings (LangGraph's task paths hold spaces and commas, the
 * validation suite's task ids underscores), so they enter the key as the hex of their UTF-8:
 * that sorts like their code points, and no hex digit sorts below `#`, so an ascending query
 * answers the writes in LangGraph's `writesSortKey` order (task path, task id, idx) with no
 * sort in memory, and no write can form another record's key.
 *
 * Each write is its own conditional put: `notExists` for idx >= 0 (insert-once: a retry of
 * the same writes, or a stale worker's, changes nothing), unconditional for the negative
 * indexes of special channels (errors, interrupts: last wins). So a retried call is
 * exactly-once without an idempotency key. Deleted with the stream.
 */

export const MAX_TASK_BYTES = 200;
export const MAX_WRITES_PER_CALL = 100;
const IDX_OFFSET = 2 ** 31;

export interface PendingWriteInput {
  idx: number;
  channel: string;
  value: JsonValue;
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

export const writesPrefix = (label: string) => `pw#${label}#`;

export const pendingWriteSk = (label: string, taskPath: string, taskId: string, idx: number) =>
  `${writesPrefix(label)}${hex(taskPath)}#${hex(taskId)}#${pad16(idx + IDX_OFFSET)}`;

const toWrite = (item: Item): PendingWrite => ({
  taskId: String(item.taskId),
  taskPath: String(item.taskPath),
  idx: Number(item.idx),
  channel: String(item.channel),
  value: (item.value ?? null) as JsonValue,
});

export class PendingWrites {
  constructor(readonly deps: { records: RecordStore; reader: Reader }) {}

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
  ): Promise<{ written: number }> {
    checkTask(task.taskId, 'taskId');
    checkTask(task.taskPath, 'taskPath');
    if (task.writes.length > MAX_WRITES_PER_CALL) {
      throw new InvalidInputError(`at most ${MAX_WRITES_PER_CALL} writes per call`);
    }
    const idxs = new Set(task.writes.map((w) => w.idx));
    if (idxs.size !== task.writes.length) throw new InvalidInputError('idx must be unique');
    await this.#checkLabel(tenant, stream, label);
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
          value: w.value,
        };
        if (w.idx < 0) {
          await records.put(item);
          return 1;
        }
        try {
          await records.put(item, { conditions: [{ op: 'notExists' }] });
          return 1;
        } catch (err) {
          if (err instanceof ConflictError) return 0; // written before: insert-once
          throw err;
        }
      }),
    );
    return { written: outcomes.reduce<number>((a, b) => a + b, 0) };
  }

  /** Every pending write of the label, in (task path, task id, idx) order. */
  async list(tenant: string, stream: string, label: string): Promise<PendingWrite[]> {
    await this.#checkLabel(tenant, stream, label);
    const out: PendingWrite[] = [];
    let after: string | undefined;
    do {
      const page = await this.deps.records.query(streamPk(tenant, stream), {
        skPrefix: writesPrefix(label),
        after,
        limit: 1000,
      });
      out.push(...page.items.map(toWrite));
      after = page.next;
    } while (after !== undefined);
    return out;
  }
}
