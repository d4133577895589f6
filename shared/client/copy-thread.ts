/**
 * A LangGraph thread's checkpoints copied into a new thread, the procedure HefestoSaver's
 * `copyThread` and the console's "Fork this run" both run over the public API (one copy of
 * it: this file imports nothing, so the browser bundle and the SDK each bring their own
 * transport as `CopyIo`).
 *
 * What is copied: the chain of checkpoints from the thread's first to `label` along their
 * parent labels (the path that led there, not sibling branches), each as one labelled
 * checkpoint of the new stream with the same label (the checkpoint id), metadata, parent
 * label and schema version, its state whole with `thread` rewritten to the new thread id,
 * then its pending writes (task by task, before the next checkpoint freezes them). Values
 * stored by ref are held by the new stream too (a set-ref op at `/_held`, then deleted, as
 * the saver's own puts do), so the copy outlives its source. Last, an event
 * `lg.copy` `{from: {streamId, label}, checkpoints}` says where the copy came from.
 *
 * A new thread id that already exists is refused (the first checkpoint's base is the empty
 * state: ErrDivergenceDetected), so a copy never writes into a thread that has history.
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
 * A checkpoint to copy: its label, metadata and parent, its state whole and its writes.
 *
 * @example
 * ```ts
 * const t: CopiedTuple = await io.tuple('lg.ticket-1.', checkpointId);
 * ```
 */
export interface CopiedTuple {
  checkpoint: { label: string; meta?: unknown; parentLabel?: string };
  state: Record<string, unknown>;
  writes: CopiedWrite[];
}

/**
 * The four public routes a copy needs, so the SDK and the browser bring their own transport.
 *
 * @example
 * ```ts
 * await copyThreadVia(io, { from: { streamId, label }, to: { streamId: newStream, threadId: 'ticket-2' } });
 * ```
 */
export interface CopyIo {
  /** GET …/tuple?label=: the checkpoint, its state whole and its pending writes. */
  tuple(streamId: string, label: string): Promise<CopiedTuple>;
  /** POST …/checkpoints, keyless (the label makes a retry harmless). */
  checkpoint(streamId: string, body: Record<string, unknown>): Promise<{ stateDigest: string }>;
  /** POST …/checkpoints/{label}/writes. */
  putWrites(
    streamId: string,
    label: string,
    task: { taskId: string; taskPath: string; writes: Array<Record<string, unknown>> },
  ): Promise<void>;
  /** POST …/events. */
  append(streamId: string, events: Array<{ type: string; payload: unknown }>): Promise<void>;
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

const escapeToken = (t: string) => t.replace(/~/g, '~0').replace(/\//g, '~1');

/** The refs a state's channel values name (`{r: {hash, size}}`). */
const refsOf = (state: Record<string, unknown>): Array<{ hash: string; size: number }> => {
  const values = (state.values ?? {}) as Record<string, unknown>;
  const out: Array<{ hash: string; size: number }> = [];
  for (const v of Object.values(values)) {
    const r = (v as { r?: { hash?: unknown; size?: unknown } } | null)?.r;
    if (r && typeof r.hash === 'string' && typeof r.size === 'number')
      out.push({ hash: r.hash, size: r.size });
  }
  return out;
};

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

/**
 * Copies (see the file's header); answers how many checkpoints were written.
 *
 * @example
 * ```ts
 * const { checkpoints } = await copyThreadVia(io, req);
 * ```
 */
export const copyThreadVia = async (
  io: CopyIo,
  req: CopyThreadRequest,
): Promise<{ checkpoints: number }> => {
  const chain: CopiedTuple[] = [];
  const seen = new Set<string>();
  for (let label: string | undefined = req.from.label; label !== undefined; ) {
    if (seen.has(label) || chain.length >= MAX_COPY_DEPTH)
      throw new Error(`the parent chain of ${req.from.label} loops or is too long to copy`);
    seen.add(label);
    const t = await io.tuple(req.from.streamId, label);
    chain.unshift(t);
    label = t.checkpoint.parentLabel;
  }
  let base = EMPTY_STATE_DIGEST_V2;
  let prev: Record<string, unknown> = {};
  const held = new Set<string>();
  for (const t of chain) {
    const next: Record<string, unknown> = { ...t.state, thread: req.to.threadId };
    delete next._held;
    const ops: Array<Record<string, unknown>> = [];
    for (const k of Object.keys(prev))
      if (!(k in next)) ops.push({ op: 'delete', path: `/${escapeToken(k)}` });
    for (const [k, v] of Object.entries(next))
      if (JSON.stringify(prev[k]) !== JSON.stringify(v))
        ops.push({ op: 'set', path: `/${escapeToken(k)}`, value: v });
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
    const tasks = new Map<string, { taskId: string; taskPath: string; writes: CopiedWrite[] }>();
    for (const w of t.writes) {
      const key = JSON.stringify([w.taskId, w.taskPath]);
      const task = tasks.get(key) ?? { taskId: w.taskId, taskPath: w.taskPath, writes: [] };
      task.writes.push(w);
      tasks.set(key, task);
    }
    for (const task of tasks.values()) {
      for (let i = 0; i < task.writes.length; i += 100) {
        await io.putWrites(req.to.streamId, t.checkpoint.label, {
          taskId: task.taskId,
          taskPath: task.taskPath,
          writes: task.writes
            .slice(i, i + 100)
            .map((w) =>
              w.ref
                ? { idx: w.idx, channel: w.channel, ref: w.ref }
                : { idx: w.idx, channel: w.channel, value: w.value },
            ),
        });
      }
    }
  }
  await io.append(req.to.streamId, [
    {
      type: COPY_EVENT,
      payload: { from: req.from, checkpoints: chain.length },
    },
  ]);
  return { checkpoints: chain.length };
};
