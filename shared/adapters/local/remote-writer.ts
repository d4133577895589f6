import { PayloadTooLargeError, UnavailableError } from '../../domain/errors.js';
import {
  type Durability,
  DurableDatabase,
  type DurableWrite,
  type Lane,
  type RemoteWrites,
  type Reply,
} from './durable-writer.js';

/**
 * The multi-process embedded server's hand-off (HEFESTO_WORKERS > 1, functions/wiring/
 * processes.ts): worker processes parse, authenticate, validate, hash, sign and read the data
 * directory's database on read-only connections of their own; every durable write goes over
 * IPC to the ONE writer process, which owns the directory (its lock, the layout) and applies
 * it on its durable writer's thread, with every other write queued meanwhile, whichever
 * worker sent it (group commit across workers).
 *
 * What crosses is what the durable writer already takes (durable-writer.ts): a compare-and-
 * swap, its `checks` (the values the worker read) and its `writes`, decided inside the
 * writer's transaction. So a conditional write stays atomic across workers exactly as across
 * requests of one process: only the writer applies it, and a worker whose read went stale is
 * answered `stale` and reads again. The reply is the writer's, as it came.
 *
 * Failure, seen from a worker (each answers the request 503 ErrUnavailable, and a retry with
 * the same Idempotency-Key gets exactly-once from the chain, as after any lost reply):
 *   1. the writer is gone (the IPC channel closed): every write waiting and every later one
 *      is refused at once (`lost`); nothing hangs;
 *   2. no reply within `timeoutMs` (a reply lost, a writer stuck): that write is refused; it
 *      may still be applied later, which the compare-and-swap makes harmless;
 *   3. a write larger than `maxWriteBytes` is refused before it is sent (413): messages are
 *      bounded (the wiring sets the bound above any object the settings let a request make).
 */

/** Worker -> writer. */
export interface WriteRequest {
  hefesto: 'write';
  id: number;
  lane: Lane;
  write: DurableWrite;
}

/** Writer -> worker. `unavailable`: the writer's own store failed (its thread died, closed). */
export type WriteReply =
  | { hefesto: 'reply'; id: number; reply: Reply }
  | { hefesto: 'reply'; id: number; unavailable: string };

/**
 * Several of either in one IPC message: the writes a worker's event loop made in one turn,
 * the replies of one of the writer's transactions. An IPC message costs its sender a write to
 * the channel and its receiver a wake-up, whatever its size (profiled: a worker spent 16% of
 * its time in the channel's writes, one message per write).
 */
export interface Batch<T> {
  hefesto: 'batch';
  items: T[];
}

const tagOf = (m: unknown) =>
  typeof m === 'object' && m !== null ? (m as { hefesto?: unknown }).hefesto : undefined;

const itemsOf = <T>(m: unknown, tag: string): T[] | undefined => {
  if (tagOf(m) === tag) return [m as T];
  if (tagOf(m) !== 'batch') return undefined;
  const items = (m as Batch<unknown>).items;
  return Array.isArray(items) && items.every((i) => tagOf(i) === tag) ? (items as T[]) : undefined;
};

/** Sends what `send` is given in one turn as one message (one item: as it is). */
const batching = <T>(
  send: (message: T | Batch<T>) => void,
  onError: (items: T[], err: unknown) => void,
) => {
  let queue: T[] = [];
  const flush = () => {
    const items = queue;
    queue = [];
    try {
      send(items.length === 1 ? (items[0] as T) : { hefesto: 'batch', items });
    } catch (err) {
      onError(items, err);
    }
  };
  return (item: T) => {
    queue.push(item);
    if (queue.length === 1) setImmediate(flush);
  };
};

/** Bytes of a write's values, roughly as they cross (strings counted by their length). */
export const sizeOfWrite = (write: DurableWrite): number => {
  let bytes = 0;
  const count = (v: unknown) => {
    if (v instanceof Uint8Array) bytes += v.byteLength;
    else if (typeof v === 'string') bytes += v.length;
    else bytes += 8;
  };
  for (const [params, expected] of write.checks) {
    for (const p of params) count(p);
    count(expected);
  }
  for (const [name, params] of write.writes) {
    count(name);
    for (const p of params) count(p);
  }
  return bytes;
};

interface Waiting {
  resolve(reply: Reply): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export interface RemoteWriterOptions {
  /** How long a write waits for the writer's reply. */
  timeoutMs: number;
  /** The largest write sent (sizeOfWrite). */
  maxWriteBytes: number;
}

/** A worker's side: each write sent to the writer, answered by its reply (see above). */
export class RemoteWriter implements RemoteWrites {
  readonly #send: (request: WriteRequest) => void;
  readonly #options: RemoteWriterOptions;
  readonly #waiting = new Map<number, Waiting>();
  #nextId = 1;
  #gone: UnavailableError | undefined;

  constructor(
    send: (message: WriteRequest | Batch<WriteRequest>) => void,
    options: RemoteWriterOptions,
  ) {
    this.#send = batching(send, (items, err) => {
      for (const { id } of items) this.#fail(id, err);
    });
    this.#options = options;
  }

  #fail(id: number, err: unknown): void {
    const waiting = this.#waiting.get(id);
    if (!waiting) return;
    this.#waiting.delete(id);
    clearTimeout(waiting.timer);
    waiting.reject(new UnavailableError('the writer process is gone', { cause: err }));
  }

  /** Writes sent and not answered yet. */
  get waiting(): number {
    return this.#waiting.size;
  }

  request(lane: Lane, write: DurableWrite): Promise<Reply> {
    if (this.#gone) return Promise.reject(this.#gone);
    const size = sizeOfWrite(write);
    if (size > this.#options.maxWriteBytes) {
      return Promise.reject(
        new PayloadTooLargeError(
          `a write of ${size} bytes is more than the ${this.#options.maxWriteBytes} a worker sends the writer`,
        ),
      );
    }
    const id = this.#nextId++;
    return new Promise<Reply>((resolve, reject) => {
      const { timeoutMs } = this.#options;
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(
          new UnavailableError(`the writer process did not answer a write within ${timeoutMs} ms`, {
            detail:
              'the write may have been applied; a retry with the same Idempotency-Key answers it once',
          }),
        );
      }, timeoutMs);
      this.#waiting.set(id, { resolve, reject, timer });
      this.#send({ hefesto: 'write', id, lane, write });
    });
  }

  /** Takes a message from the writer; false if it is not one of ours. */
  receive(message: unknown): boolean {
    const replies = itemsOf<WriteReply>(message, 'reply');
    if (!replies) return false;
    for (const reply of replies) {
      const waiting = this.#waiting.get(reply.id);
      if (!waiting) continue; // timed out before: its request was answered already
      this.#waiting.delete(reply.id);
      clearTimeout(waiting.timer);
      if ('unavailable' in reply) waiting.reject(new UnavailableError(reply.unavailable));
      else waiting.resolve(reply.reply);
    }
    return true;
  }

  /** The writer is gone: refuses every write waiting and every later one. */
  lost(): void {
    this.#gone ??= new UnavailableError('the writer process is gone', {
      detail: 'the server is restarting; retry with the same Idempotency-Key',
    });
    for (const waiting of this.#waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(this.#gone);
    }
    this.#waiting.clear();
  }
}

/**
 * Test hook (child-process tests): called with each write the writer applied, before its
 * reply is sent; true drops the reply (the write happened, its answer never comes).
 */
export const remoteWriterTestHooks: { dropReply?: (lane: Lane, write: DurableWrite) => boolean } =
  {};

/**
 * The writer's side: one DurableDatabase per lane of the data directory's database file,
 * applying the workers' writes on the writer process's durable writer thread.
 */
export class WriteServer {
  readonly #dbs: Record<Lane, DurableDatabase>;
  /** Each worker's reply channel, batching what one turn answers. */
  readonly #senders = new WeakMap<
    (m: WriteReply | Batch<WriteReply>) => void,
    (r: WriteReply) => void
  >();

  constructor(
    path: string,
    statements: Record<Lane, { check: string } & Record<string, string>>,
    options: { durability?: Durability } = {},
  ) {
    const of = (lane: Lane) =>
      new DurableDatabase(path, statements[lane], {
        lane,
        ...(options.durability && { durability: options.durability }),
      });
    this.#dbs = { objects: of('objects'), records: of('records') };
  }

  /**
   * Applies a worker's writes and sends their replies (`send`: that worker's channel, the same
   * function for each of its messages); false if the message holds no writes.
   */
  handle(message: unknown, send: (reply: WriteReply | Batch<WriteReply>) => void): boolean {
    const requests = itemsOf<WriteRequest>(message, 'write');
    if (!requests) return false;
    let reply = this.#senders.get(send);
    if (!reply) {
      reply = batching(send, () => {}); // a worker gone: its writes are applied, unanswered
      this.#senders.set(send, reply);
    }
    for (const request of requests) this.#apply(request, reply);
    return true;
  }

  #apply({ id, lane, write }: WriteRequest, send: (reply: WriteReply) => void): void {
    const db = this.#dbs[lane];
    if (!db) {
      send({ hefesto: 'reply', id, unavailable: `no lane ${String(lane)}` });
      return;
    }
    db.request(write).then(
      (reply) => {
        if (remoteWriterTestHooks.dropReply?.(lane, write)) return;
        send({ hefesto: 'reply', id, reply: { ...reply, id } });
      },
      (err: unknown) =>
        send({
          hefesto: 'reply',
          id,
          unavailable: err instanceof Error ? err.message : 'the writer failed',
        }),
    );
  }

  close(): void {
    this.#dbs.objects.close();
    this.#dbs.records.close();
  }
}
