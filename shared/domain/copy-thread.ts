import { InvalidInputError, PayloadTooLargeError, StreamExistsError } from './errors.js';

/**
 * A LangGraph thread's checkpoints copied into a new thread: the one procedure behind
 * HefestoSaver's `copyThread` (over the public API) and `POST /v1/streams/{id}/copy-thread`
 * (over the services: the http room's copy-io.ts, the route the console's "Fork this run"
 * calls). It is pure over its transport (`CopyIo`), so it lives in the domain, where both the
 * SDK and the routes may import it.
 *
 * What is copied: the chain of checkpoints from the thread's first to `label` along their
 * parent labels (the path that led there, not sibling branches), each as one labelled
 * checkpoint of the new stream with the same label (the checkpoint id), metadata, parent
 * label and schema version, its state with `thread` rewritten to the new thread id, then its
 * pending writes (task by task, before the next checkpoint freezes them). Values stored by ref
 * are held by the new stream too (a set-ref op at `/_held`, then deleted, as the saver's own
 * puts do), so the copy outlives its source. Last, an event `lg.copy`
 * `{from: {streamId, label}, checkpoints}` says where the copy came from.
 *
 * Bounded: the walk back keeps labels only, the copy holds one checkpoint's state at a time
 * (and the one before it); each checkpoint sends only what changed inside its channels (as the
 * saver does), and the largest changes go by ref (`io.putValue`, values uploaded as chunks)
 * until the rest fits COPY_BUDGET_BYTES; pending writes go in batches of at most that many
 * bytes. With `bounds`, one call copies at most `maxCheckpoints` checkpoints (or stops after
 * the one that takes what it sent past `maxBytes`) and answers `done: false`: the next call
 * carries on from there (step 2), so a caller loops until `done`.
 *
 * Resumable, in steps (a crash after any of them is finished by running the copy again):
 * 1. Walk the parent labels back from `label` (reads only).
 * 2. Read the new stream's head. None: copy from the first checkpoint. A head whose label is
 *    on the chain, whose thread is the new one and whose `lg.copy` (if any) names this copy:
 *    a copy of ours that stopped there, so carry on from it (its writes are sent again: a
 *    pending write is insert-once, so those stored stay as they are). Any other head: a
 *    thread with a history of its own, refused before anything is written.
 * 3. Each checkpoint (its label makes a retry harmless), then its writes.
 * 4. The `lg.copy` event, under an Idempotency-Key made from the copy's source, so a retry
 *    after a lost reply appends it once.
 */

/**
 * One pending write of a copied checkpoint, as `GET …/tuple` answers it: inline or by ref.
 *
 * @example
 * ```ts
 * const w: CopiedWrite = { taskId: 't1', taskPath: '~__pregel_pull, agent', idx: 0, channel: 'messages', value: [] };
 * ```
 */
export interface CopiedWrite {
  taskId: string;
  taskPath: string;
  idx: number;
  channel: string;
  value?: unknown;
  ref?: { hash: string; size: number };
}

/**
 * A checkpoint to copy: its label, metadata, parent and state digest, its state whole and its
 * writes.
 *
 * @example
 * ```ts
 * const t: CopiedTuple = await io.tuple('lg.ticket-1.', checkpointId);
 * ```
 */
export interface CopiedTuple {
  checkpoint: { label: string; meta?: unknown; parentLabel?: string; stateDigest?: string };
  state: Record<string, unknown>;
  writes: CopiedWrite[];
}

/**
 * The public routes a copy needs, so the SDK and the browser bring their own transport.
 *
 * @example
 * ```ts
 * await copyThreadVia(io, { from: { streamId, label }, to: { streamId: newStream, threadId: 'ticket-2' } });
 * ```
 */
export interface CopyIo {
  /** GET …/tuple?label=: the checkpoint, its state whole and its pending writes. */
  tuple(streamId: string, label: string): Promise<CopiedTuple>;
  /**
   * GET …/tuple: the newest checkpoint; `{checkpoint: null}` when the stream exists without
   * one (a plain stream: refused), undefined when there is no such stream.
   */
  head(streamId: string): Promise<CopiedTuple | { checkpoint: null } | undefined>;
  /** GET …/checkpoints/{label}: its parent label. */
  parentOf(streamId: string, label: string): Promise<string | undefined>;
  /** GET …/events?type=lg.copy: the payloads of the stream's copy events (none: []). */
  copies(streamId: string): Promise<unknown[]>;
  /** POST …/checkpoints, keyless (the label makes a retry harmless). */
  checkpoint(streamId: string, body: Record<string, unknown>): Promise<{ stateDigest: string }>;
  /** POST …/checkpoints/{label}/writes. */
  putWrites(
    streamId: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: Array<Record<string, unknown>> },
  ): Promise<void>;
  /** POST …/events with this Idempotency-Key. */
  append(
    streamId: string,
    events: Array<{ type: string; payload: unknown }>,
    idempotencyKey: string,
  ): Promise<void>;
  /**
   * Uploads a value as chunks (`client.putValue`) for a checkpoint to name by ref. Without it
   * a checkpoint whose changes do not fit one request is refused before it is sent.
   */
  putValue?(value: unknown): Promise<{ hash: string; size: number }>;
}

/**
 * The type of the event a copy ends with (`{from: {streamId, label}, checkpoints}`).
 *
 * @example
 * ```ts
 * const { events } = await client.readEvents('lg.ticket-2.', { type: COPY_EVENT });
 * ```
 */
export const COPY_EVENT = 'lg.copy';
/**
 * The state digest (v2) of the empty state: a new thread's first base.
 *
 * @example
 * ```ts
 * await client.checkpoint('lg.ticket-2.', { ops, baseDigest: EMPTY_STATE_DIGEST_V2 });
 * ```
 */
export const EMPTY_STATE_DIGEST_V2 =
  '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327';
/** Where a checkpoint names a ref for the stream to hold (the saver's `/_held`). */
const HELD = '/_held';
/**
 * Checkpoints a copy walks back at most (a longer chain is refused before any write).
 *
 * @example
 * ```ts
 * if (depth > MAX_COPY_DEPTH) throw new Error('too long to copy');
 * ```
 */
export const MAX_COPY_DEPTH = 10_000;
/**
 * Bytes of ops (or of pending writes) one request of a copy sends inline at most: the saver's
 * INLINE_BUDGET_BYTES, below the server's 256 KiB limit with room for the rest of the body.
 *
 * @example
 * ```ts
 * const fits = JSON.stringify(ops).length <= COPY_BUDGET_BYTES;
 * ```
 */
export const COPY_BUDGET_BYTES = 192 * 1024;

const escapeToken = (t: string) => t.replace(/~/g, '~0').replace(/\//g, '~1');
const utf8 = (v: unknown): number => new TextEncoder().encode(JSON.stringify(v) ?? '').length;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The ops that turn `before` into `after` at `path` (what changed only, as the saver's
 * json-diff.ts: an object key by key, a grown array appended to, one of equal length index by
 * index, anything else set whole).
 */
const diff = (before: unknown, after: unknown, path: string, ops: Op[]): Op[] => {
  if (same(before, after)) return ops;
  if (isObject(before) && isObject(after)) {
    for (const k of Object.keys(before))
      if (!Object.hasOwn(after, k)) ops.push({ op: 'delete', path: `${path}/${escapeToken(k)}` });
    for (const [k, v] of Object.entries(after)) {
      const at = `${path}/${escapeToken(k)}`;
      if (!Object.hasOwn(before, k)) ops.push({ op: 'set', path: at, value: v });
      else diff(before[k], v, at, ops);
    }
    return ops;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    if (after.length >= before.length && before.every((x, i) => same(x, after[i]))) {
      for (const v of after.slice(before.length))
        ops.push({ op: 'set', path: `${path}/-`, value: v });
      return ops;
    }
    if (after.length === before.length) {
      for (const [i, v] of after.entries()) diff(before[i], v, `${path}/${i}`, ops);
      return ops;
    }
  }
  ops.push({ op: 'set', path, value: after });
  return ops;
};

type Op = Record<string, unknown>;
type Ref = { hash: string; size: number };

const refOf = (v: unknown): Ref | undefined => {
  const r = (v as { r?: { hash?: unknown; size?: unknown } } | null)?.r;
  return r && typeof r.hash === 'string' && typeof r.size === 'number'
    ? { hash: r.hash, size: r.size }
    : undefined;
};

/** The refs a state's channel values name (`{r: {hash, size}}`). */
const refsOf = (state: Record<string, unknown>): Ref[] =>
  Object.values((state.values ?? {}) as Record<string, unknown>)
    .map(refOf)
    .filter((r): r is Ref => r !== undefined);

/**
 * What to copy (a stream and the label to copy up to) and where (a new stream and thread id).
 *
 * @example
 * ```ts
 * const req: CopyThreadRequest = { from: { streamId: 'lg.a.', label }, to: { streamId: 'lg.b.', threadId: 'b' } };
 * ```
 */
export interface CopyThreadRequest {
  from: { streamId: string; label: string };
  to: { streamId: string; threadId: string };
}

/** The copy's state `next` as ops on `prev`, the largest channel changes by ref past the budget. */
const opsFor = async (
  io: CopyIo,
  prev: Record<string, unknown>,
  next: Record<string, unknown>,
  label: string,
): Promise<Op[]> => {
  const ops: Op[] = [];
  for (const k of Object.keys(prev))
    if (!(k in next)) ops.push({ op: 'delete', path: `/${escapeToken(k)}` });
  const after = next.values;
  for (const [k, v] of Object.entries(next))
    if (!(k === 'values' && isObject(after)) && !same(prev[k], v))
      ops.push({ op: 'set', path: `/${escapeToken(k)}`, value: v });
  if (!isObject(after)) return ops;
  const before = isObject(prev.values) ? prev.values : undefined;
  if (before === undefined) ops.push({ op: 'set', path: '/values', value: {} });
  const channels: Array<{ ch: string; ops: Op[]; size: number }> = [];
  for (const ch of Object.keys(before ?? {}))
    if (!Object.hasOwn(after, ch)) ops.push({ op: 'delete', path: `/values/${escapeToken(ch)}` });
  for (const [ch, v] of Object.entries(after)) {
    const at = `/values/${escapeToken(ch)}`;
    const was = before?.[ch];
    const changed =
      was === undefined || refOf(v) || refOf(was)
        ? same(was, v)
          ? []
          : [{ op: 'set', path: at, value: v }]
        : diff(was, v, at, []);
    if (changed.length > 0) channels.push({ ch, ops: changed, size: utf8(changed) });
  }
  // The largest changes go by ref until the rest fits (the saver's pickByRef).
  let inline = utf8(ops) + channels.reduce((n, c) => n + c.size, 0);
  for (const c of [...channels].sort((a, b) => b.size - a.size)) {
    if (inline <= COPY_BUDGET_BYTES) break;
    if (!io.putValue)
      throw new PayloadTooLargeError(
        `checkpoint ${label} changes more than one request carries; copy it with copyThread from @hefesto/langgraph`,
      );
    const ref = await io.putValue(after[c.ch]);
    inline -= c.size;
    c.ops = [{ op: 'set', path: `/values/${escapeToken(c.ch)}`, value: { r: ref } }];
    after[c.ch] = { r: ref };
  }
  for (const c of channels) ops.push(...c.ops);
  return ops;
};

/**
 * A checkpoint's writes, task by task, in requests of at most COPY_BUDGET_BYTES; answers the
 * bytes sent.
 */
const putWritesOf = async (io: CopyIo, streamId: string, t: CopiedTuple): Promise<number> => {
  let sent = 0;
  const tasks = new Map<string, { taskId: string; taskPath: string; writes: CopiedWrite[] }>();
  for (const w of t.writes) {
    const key = JSON.stringify([w.taskId, w.taskPath]);
    const task = tasks.get(key) ?? { taskId: w.taskId, taskPath: w.taskPath, writes: [] };
    task.writes.push(w);
    tasks.set(key, task);
  }
  for (const task of tasks.values()) {
    let batch: Op[] = [];
    let size = 0;
    const send = async () => {
      if (batch.length === 0) return;
      await io.putWrites(streamId, t.checkpoint.label, {
        taskId: task.taskId,
        taskPath: task.taskPath,
        writes: batch,
      });
      batch = [];
      size = 0;
    };
    for (const w of task.writes) {
      const one: Op = w.ref
        ? { idx: w.idx, channel: w.channel, ref: w.ref }
        : { idx: w.idx, channel: w.channel, value: w.value };
      const n = utf8(one);
      if (batch.length >= 100 || (batch.length > 0 && size + n > COPY_BUDGET_BYTES)) await send();
      batch.push(one);
      size += n;
      sent += n;
    }
    await send();
  }
  return sent;
};

const copyKey = (req: CopyThreadRequest): string => {
  // A key of the allowed characters that names the copy's source (FNV-1a of it, 2 × 32 bits).
  const text = JSON.stringify([req.from.streamId, req.from.label, req.to.threadId]);
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    a = Math.imul(a ^ text.charCodeAt(i), 0x01000193) >>> 0;
    b = Math.imul(b ^ text.charCodeAt(i), 0x811c9dc5) >>> 0;
  }
  return `lg-copy-${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0')}`;
};

/**
 * How much one call of {@link copyThreadVia} copies at most (default: all of it).
 *
 * @example
 * ```ts
 * const bounds: CopyBounds = { maxCheckpoints: 16, maxBytes: 4 * 1024 * 1024 };
 * ```
 */
export interface CopyBounds {
  /** Checkpoints one call copies at most. */
  maxCheckpoints?: number;
  /** Bytes of ops and writes after which a call stops (after the checkpoint that passed it). */
  maxBytes?: number;
}

/**
 * Where a copy stands: `done` once every checkpoint and the `lg.copy` event are written;
 * `copied` of the chain's `checkpoints` are in the new stream.
 *
 * @example
 * ```ts
 * for (let p = await copyThreadVia(io, req, bounds); !p.done; p = await copyThreadVia(io, req, bounds));
 * ```
 */
export interface CopyProgress {
  done: boolean;
  checkpoints: number;
  copied: number;
}

/**
 * Copies (see the file's header), at most `bounds` of it in one call; answers how far the copy
 * got.
 *
 * @example
 * ```ts
 * const { done, copied, checkpoints } = await copyThreadVia(io, req, { maxCheckpoints: 16 });
 * ```
 */
export const copyThreadVia = async (
  io: CopyIo,
  req: CopyThreadRequest,
  bounds: CopyBounds = {},
): Promise<CopyProgress> => {
  if (req.from.streamId === req.to.streamId)
    throw new InvalidInputError('a thread is copied into another stream than its own');
  // 1. The chain, labels only, first to last.
  const labels: string[] = [];
  const seen = new Set<string>();
  for (let label: string | undefined = req.from.label; label !== undefined; ) {
    if (seen.has(label) || labels.length >= MAX_COPY_DEPTH)
      throw new InvalidInputError(
        `the parent chain of ${req.from.label} loops or is too long to copy`,
      );
    seen.add(label);
    labels.push(label);
    label = await io.parentOf(req.from.streamId, label);
  }
  labels.reverse();
  const progress = (copied: number, done: boolean): CopyProgress => ({
    done,
    checkpoints: labels.length,
    copied,
  });
  // 2. Where a copy of ours stopped, if one did.
  const refused = (why: string) =>
    new StreamExistsError(
      req.to.streamId,
      `thread ${req.to.threadId} exists with a history of its own (${why}): not copied into`,
    );
  const head = await io.head(req.to.streamId);
  let start = 0;
  let base = EMPTY_STATE_DIGEST_V2;
  let prev: Record<string, unknown> = {};
  if (head?.checkpoint === null) throw refused('it has events and no checkpoint');
  if (head) {
    const at = labels.indexOf(head.checkpoint.label);
    if (at < 0) throw refused(`its newest checkpoint ${head.checkpoint.label} is not on the chain`);
    if (head.state.thread !== req.to.threadId) throw refused('its state names another thread');
    const copies = await io.copies(req.to.streamId);
    const ours = (c: unknown) => {
      const from = (c as { from?: { streamId?: unknown; label?: unknown } } | null)?.from;
      return from?.streamId === req.from.streamId && from?.label === req.from.label;
    };
    if (!copies.every(ours)) throw refused('it is a copy of another checkpoint');
    if (copies.length > 0) return progress(labels.length, true);
    if (head.checkpoint.stateDigest === undefined) throw refused('its head has no state digest');
    await putWritesOf(io, req.to.streamId, head);
    start = at + 1;
    base = head.checkpoint.stateDigest;
    prev = head.state;
  }
  const held = new Set(refsOf(prev).map((r) => r.hash));
  // 3. Each checkpoint, then its writes, as far as the bounds go.
  const maxCheckpoints = bounds.maxCheckpoints ?? Number.POSITIVE_INFINITY;
  const maxBytes = bounds.maxBytes ?? Number.POSITIVE_INFINITY;
  let sent = 0;
  for (let i = start; i < labels.length; i++) {
    if (i - start >= maxCheckpoints || sent >= maxBytes) return progress(i, false);
    const label = labels[i] as string;
    const t = await io.tuple(req.from.streamId, label);
    const next: Record<string, unknown> = { ...t.state, thread: req.to.threadId };
    delete next._held;
    if (isObject(next.values)) next.values = { ...next.values };
    const ops = await opsFor(io, prev, next, label);
    for (const ref of refsOf(next)) {
      if (held.has(ref.hash)) continue;
      held.add(ref.hash);
      ops.push({ op: 'set', path: HELD, ref }, { op: 'delete', path: HELD });
    }
    if (ops.length === 0) ops.push({ op: 'set', path: '/thread', value: req.to.threadId });
    const schema = typeof next.schema === 'number' ? { schema: next.schema } : {};
    const res = await io.checkpoint(req.to.streamId, {
      ops,
      baseDigest: base,
      label: t.checkpoint.label,
      ...(t.checkpoint.meta === undefined ? {} : { meta: t.checkpoint.meta }),
      ...(t.checkpoint.parentLabel === undefined ? {} : { parentLabel: t.checkpoint.parentLabel }),
      ...schema,
    });
    base = res.stateDigest;
    prev = next;
    sent += utf8(ops) + (await putWritesOf(io, req.to.streamId, t));
  }
  // 4. Where the copy came from, once.
  await io.append(
    req.to.streamId,
    [{ type: COPY_EVENT, payload: { from: req.from, checkpoints: labels.length } }],
    copyKey(req),
  );
  return progress(labels.length, true);
};
