import {
  canonicalBytes,
  checkClientOptions,
  type DeltaOp,
  emptyStateDigest,
  HefestoApiError,
  HefestoClient,
  INLINE_BUDGET_BYTES,
  type Json,
  pickByRef,
  type SetRefOp,
  type PendingWrite as StoredWrite,
  type ValueRef,
} from '@hefesto/client';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type DeltaChannelHistory,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from '@langchain/langgraph-checkpoint';
import { type ChannelSchema, ChannelUpcasters } from './channel-schema.js';
import { type DrawableGraph, type GraphShape, graphShapeOf } from './graph-shape.js';
import { diffJson } from './json-diff.js';
import { PutWaiters } from './put-waiters.js';
import { checkpointIdOf, labelOf, streamIdOf, threadPrefix } from './stream-ids.js';
import { type ThreadLeaseOptions, ThreadLeases } from './thread-leases.js';
import { WritesInFlight } from './writes-in-flight.js';

/**
 * A LangGraph checkpointer on Hefesto: one stream per (thread, namespace), one labelled
 * checkpoint per put, holding only what changed (the channels in `newVersions`, and inside
 * them the JSON diff: a grown messages list is one append op).
 *
 * Stream state: `{ ckpt: <checkpoint without channel_values>, values: { channel: encoded } }`
 * where encoded is `{ j: <JSON> }` for serde's json type, else `{ t: type, b: base64 }`, or
 * `{ r: {hash, size} }` for a large one: that encoded value uploaded as chunks
 * (`client.putValue`) and read back from them (`client.readValue`, each chunk checked against
 * its hash), so no request or answer carries it whole. Which values go by ref: every one over
 * `largeValueBytes`, then the largest others until the values a call sends inline fit
 * INLINE_BUDGET_BYTES (below the server's 256 KiB limit); pending writes alike (by `ref`,
 * which the server holds against the chunk GC). The checkpoint that first names a ref also
 * sets it at `/_held` and deletes it again (a ref op: the server puts the stream's reference
 * to its chunks, released with the stream), so the chunks live as long as the thread.
 *
 * Concurrency: a put that continues from the latest checkpoint this saver read (or wrote) for
 * the thread is linear, conditional on the thread's head state not having moved, so a stale
 * second worker is refused (StaleThreadError) instead of forking the thread. A put from any
 * other parent (explicit time travel) branches with `baseSeq`. With `exclusive: true` each
 * thread is also leased (thread-leases.ts): a second worker is refused before it runs.
 */

// Threads are new streams, and new streams use state digest v2 (docs/records-v2.md).
const EMPTY_DIGEST = emptyStateDigest(2);

/** `s`: the schema version a pending write was written at, above 1 (channel-schema.ts). */
type Encoded = ({ j: Json } | { t: string; b: string } | { r: ValueRef }) & { s?: number };

/** Where the state holds the channel values (a history's seeds are read there). */
const VALUES = '/values';
/**
 * Puts send no Idempotency-Key: the checkpoint's label is unique in its stream, so a retry of
 * one that landed is ErrLabelExists (taken as landed, below), and the server keeps no
 * idempotency record per checkpoint (~300 B each for a day, and a read per put).
 */
const KEYLESS = { idempotencyKey: null };
/** Channels one history request asks for at most (the server's limit). */
const HISTORY_CHANNELS = 64;

/** Where a put names a new ref for the server to hold (set, then deleted: see above). */
const HELD = '/_held';
interface StreamState {
  [k: string]: Json;
}

interface Tip {
  label: string | null;
  seq: number;
  stateDigest: string;
  state: StreamState;
}

export interface HefestoSaverOptions {
  baseUrl?: string;
  apiKey?: string;
  /** A client of your own (instead of baseUrl/apiKey). */
  client?: HefestoClient;
  /** First part of every stream id. Default `lg`. */
  prefix?: string;
  serde?: SerializerProtocol;
  /**
   * One worker per thread: take an exclusive lease per thread (renewed while in use,
   * released, handed over or expiring), so a second worker is refused with ErrFenced
   * (ThreadFencedError) before it runs anything (thread-leases.ts).
   */
  exclusive?: boolean;
  /** Lease owner name, ttl and idle time for `exclusive`. */
  lease?: ThreadLeaseOptions;
  /**
   * A channel value or pending write whose encoded JSON is over this many bytes is stored by
   * ref (see above). Default INLINE_BUDGET_BYTES (192 KiB).
   */
  largeValueBytes?: number;
  /** The schema version of the graph's channel values, with upcasters (channel-schema.ts). */
  schema?: ChannelSchema;
}

/** A put refused because another worker moved the thread since this one read it. */
export class StaleThreadError extends Error {
  constructor(threadId: string, cause: unknown) {
    super(
      `thread ${threadId} moved since this worker read it: another worker wrote a checkpoint; ` +
        'this write was refused instead of forking the thread (invoke again to continue from the new head)',
      { cause },
    );
    this.name = 'StaleThreadError';
  }
}

const notFound = (err: unknown) =>
  err instanceof HefestoApiError &&
  (err.code === 'ErrNotFound' || err.code === 'ErrStreamNotFound');

/** A putWrites gives up on its label once this saver's puts of the thread are quiet this long. */
const PUT_QUIET_MS = 10_000;
/** ... and after this many waits of at most 2 s whatever happens (about 10 minutes). */
const MAX_LABEL_WAITS = 300;

export class HefestoSaver extends BaseCheckpointSaver {
  readonly client: HefestoClient;
  readonly prefix: string;
  readonly #tips = new Map<string, Tip>();
  readonly #puts = new PutWaiters();
  readonly #writing = new WritesInFlight();
  /** Set with `exclusive: true`. */
  readonly leases: ThreadLeases | undefined;
  readonly #largeValueBytes: number;
  readonly #schema: ChannelUpcasters;
  #graph: GraphShape | undefined;

  constructor(options: HefestoSaverOptions) {
    super(options.serde);
    // Without a client, baseUrl and apiKey are checked now: a missing one is an
    // InvalidOptionsError here, not retries ending in ErrUnavailable at the first call.
    if (!options.client) checkClientOptions(options, 'HefestoSaver (or pass `client`)');
    this.client =
      options.client ??
      new HefestoClient({ baseUrl: options.baseUrl as string, apiKey: options.apiKey });
    this.prefix = options.prefix ?? 'lg';
    this.leases = options.exclusive ? new ThreadLeases(this.client, options.lease) : undefined;
    this.#largeValueBytes = options.largeValueBytes ?? INLINE_BUDGET_BYTES;
    this.#schema = new ChannelUpcasters(options.schema);
  }

  /**
   * Opts in to recording the graph's shape (graph-shape.ts): from now on each put keeps
   * `graphShapeOf(graph)` in the thread's state at `/graph` (written when it changes), for
   * the console to draw the whole graph with the path a run took. Call it after compiling
   * the graph with this saver; answers the saver.
   *
   * @example
   * ```ts
   * const graph = builder.compile({ checkpointer: saver });
   * saver.recordGraph(graph);
   * ```
   */
  recordGraph(graph: DrawableGraph): this {
    this.#graph = graphShapeOf(graph);
    return this;
  }

  /** `exclusive`: releases this saver's leases of a thread (of every thread without one). */
  async release(threadId?: string): Promise<void> {
    await this.leases?.release(threadId);
  }

  /** `exclusive`: drains the thread and releases it, for another worker to continue it. */
  async handOver(threadId: string, graceMs?: number): Promise<void> {
    await this.leases?.handOver(threadId, graceMs);
  }

  /** The stream holding (thread, namespace). */
  streamIdOf(threadId: string, ns = ''): string {
    return streamIdOf(this.prefix, threadId, ns);
  }

  #ids(config: RunnableConfig) {
    const c = config.configurable;
    if (!c) throw new Error('Empty configuration supplied.');
    const threadId = c.thread_id as string | undefined;
    if (!threadId) throw new Error('Missing "thread_id" field in passed "config.configurable".');
    const ns = (c.checkpoint_ns as string | undefined) ?? '';
    return {
      threadId,
      ns,
      stream: streamIdOf(this.prefix, threadId, ns),
      id: c.checkpoint_id as string | undefined,
    };
  }

  async #encode(value: unknown): Promise<Encoded> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    if (type === 'json') return { j: JSON.parse(new TextDecoder().decode(bytes)) as Json };
    return { t: type, b: Buffer.from(bytes).toString('base64') };
  }

  async #decode(e: Encoded): Promise<unknown> {
    if ('r' in e) return this.#decode((await this.client.readValue(e.r)) as Encoded);
    if ('j' in e) return this.serde.loadsTyped('json', JSON.stringify(e.j));
    return this.serde.loadsTyped(e.t, Buffer.from(e.b, 'base64'));
  }

  async #tuple(
    ids: { threadId: string; ns: string; stream: string },
    label: { label: string; meta?: Json; parentLabel?: string },
    state: StreamState,
    stored?: StoredWrite[],
  ): Promise<CheckpointTuple> {
    const { threadId, ns, stream } = ids;
    const ckpt = state.ckpt as unknown as Omit<Checkpoint, 'channel_values'>;
    const channel_values: Record<string, unknown> = {};
    const from = this.#schema.versionOf(state);
    for (const [k, v] of Object.entries((state.values ?? {}) as Record<string, Encoded>)) {
      channel_values[k] = this.#schema.upcast(k, await this.#decode(v), from);
    }
    const checkpoint = { ...structuredClone(ckpt), channel_values } as Checkpoint;
    const writes = stored ?? (await this.client.getPendingWrites(stream, label.label)).writes;
    const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
      writes.map(
        async (w) => [w.taskId, w.channel, await this.#writeValue(w)] as CheckpointPendingWrite,
      ),
    );
    const parentId =
      label.parentLabel === undefined ? undefined : checkpointIdOf(label.parentLabel);
    if (checkpoint.v < 4 && label.parentLabel !== undefined) {
      const parent = await this.client.getPendingWrites(stream, label.parentLabel);
      const sends = parent.writes.filter((w) => w.channel === TASKS);
      checkpoint.channel_values[TASKS] = await Promise.all(sends.map((w) => this.#writeValue(w)));
      const versions = Object.values(checkpoint.channel_versions);
      checkpoint.channel_versions[TASKS] =
        versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
    }
    const metadata = (
      label.meta === undefined
        ? undefined
        : await this.serde.loadsTyped('json', JSON.stringify(label.meta))
    ) as CheckpointMetadata;
    const configurable = { thread_id: threadId, checkpoint_ns: ns };
    return {
      config: { configurable: { ...configurable, checkpoint_id: checkpoint.id } },
      checkpoint,
      metadata,
      parentConfig:
        parentId === undefined
          ? undefined
          : { configurable: { ...configurable, checkpoint_id: parentId } },
      pendingWrites,
    };
  }

  /**
   * A stored pending write's value, read from its chunks when it was written by ref, in this
   * saver's schema version (upcast from the one it was stamped with).
   */
  async #writeValue(w: StoredWrite): Promise<unknown> {
    const encoded = (w.ref ? await this.client.readValue(w.ref) : w.value) as Encoded;
    const from = this.#schema.versionOfWrite(encoded);
    return this.#schema.upcast(w.channel, await this.#decode(encoded), from);
  }

  /**
   * The channels of `changed` whose encoded values go by ref (see above), uploaded; answers
   * the refs the base does not name yet, which the put asks the server to hold.
   */
  async #largeByRef(
    values: Record<string, Json>,
    changed: string[],
    base: Record<string, Json>,
  ): Promise<ValueRef[]> {
    const sizes = changed.map((ch) => canonicalBytes(values[ch] as Json));
    const picked = pickByRef(sizes, this.#largeValueBytes, INLINE_BUDGET_BYTES);
    const known = new Set(Object.values(base).map((v) => (v as { r?: ValueRef }).r?.hash));
    const held: ValueRef[] = [];
    for (const i of picked) {
      const ch = changed[i] as string;
      const ref = await this.client.putValue(values[ch] as Json);
      values[ch] = { r: { hash: ref.hash, size: ref.size } } as unknown as Json;
      if (!known.has(ref.hash)) {
        known.add(ref.hash);
        held.push(ref);
      }
    }
    return held;
  }

  /**
   * One request (`client.getCheckpointTuple`): the checkpoint, its writes and its state,
   * conditional on the tip this saver holds for the thread, so an unchanged thread sends no
   * state and one moved on by another worker sends only the deltas since.
   */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (!config.configurable?.thread_id) return undefined;
    const ids = this.#ids(config);
    await this.leases?.ensure(ids.stream, ids.threadId, true);
    const tip = this.#tips.get(ids.stream);
    const label = ids.id === undefined ? undefined : labelOf(ids.id);
    // The held state answers for the head, or for its own label; deltas are applied to
    // it in place (client), so it is only sent where its tip is then replaced by the answer.
    const held =
      tip?.label && (label === undefined || label === tip.label)
        ? { seq: tip.seq, stateDigest: tip.stateDigest, state: tip.state }
        : undefined;
    try {
      const t = await this.client.getCheckpointTuple(ids.stream, { label, since: held });
      const state = t.state as StreamState;
      if (!t.checkpoint || !(state.ckpt as { id?: string } | undefined)?.id) {
        if (label === undefined) this.#tips.delete(ids.stream);
        return undefined;
      }
      if (label === undefined || held) {
        this.#tips.set(ids.stream, {
          label: t.checkpoint.label,
          seq: t.seq,
          stateDigest: t.stateDigest,
          state,
        });
      }
      return await this.#tuple(ids, t.checkpoint, state, t.writes);
    } catch (err) {
      if (held) this.#tips.delete(ids.stream); // its state may be half changed
      if (!notFound(err)) throw err;
      if (ids.id === undefined) {
        this.#tips.set(ids.stream, { label: null, seq: 0, stateDigest: EMPTY_DIGEST, state: {} });
      }
      return undefined;
    }
  }

  /**
   * LangGraph 1.1+'s DeltaChannel history in one request whatever the depth
   * (`client.getChannelHistory`): the server walks the labels' parent chain, collecting each
   * channel's pending writes (checked against their binding) up to the nearest ancestor whose
   * state holds the channel (`/values/{channel}`), the seed. Same answer as the base class's
   * walk of one getTuple per ancestor.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config, channels } = options;
    const out: Record<string, DeltaChannelHistory> = {};
    for (const ch of channels) out[ch] = { writes: [] };
    if (channels.length === 0 || !config.configurable?.thread_id) return out;
    const ids = this.#ids(config);
    await this.leases?.ensure(ids.stream, ids.threadId, true);
    const label = ids.id === undefined ? undefined : labelOf(ids.id);
    for (let i = 0; i < channels.length; i += HISTORY_CHANNELS) {
      const part = channels.slice(i, i + HISTORY_CHANNELS);
      let found: Awaited<ReturnType<HefestoClient['getChannelHistory']>>;
      try {
        found = await this.client.getChannelHistory(ids.stream, {
          label,
          channels: part,
          seedAt: VALUES,
        });
      } catch (err) {
        if (notFound(err)) return out;
        throw err;
      }
      for (const ch of part) {
        const h = found[ch];
        if (!h) continue;
        const writes = await Promise.all(
          h.writes.map(
            async (w) => [w.taskId, w.channel, await this.#writeValue(w)] as CheckpointPendingWrite,
          ),
        );
        out[ch] = h.seed ? { writes, seed: await this.#seed(ids.stream, ch, h.seed) } : { writes };
      }
    }
    return out;
  }

  /** A DeltaChannel's seed in this saver's version: upcast from its state's (one read if so). */
  async #seed(stream: string, channel: string, seed: { seq: number; value: Json }) {
    const value = await this.#decode(seed.value as Encoded);
    if (!this.#schema.upcasts(channel)) return value;
    const stored = await this.client.getValue(stream, '/schema', { at: seed.seq }).then(
      (v) => v.value,
      (err: unknown) => {
        if (notFound(err)) return undefined;
        throw err;
      },
    );
    return this.#schema.upcast(channel, value, this.#schema.versionOf({ schema: stored }));
  }

  /**
   * LangGraph's loop (durability `async`) calls putWrites for a checkpoint before it calls
   * that checkpoint's put (puts are chained after the previous one, writes are not); the
   * server refuses writes to a label it does not hold yet, so putWrites waits for it.
   */
  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const { stream } = this.#ids(config);
    const ended = this.#puts.started(stream);
    try {
      const out = await this.#put(config, checkpoint, metadata, newVersions);
      this.#puts.landed(`${stream}#${checkpoint.id}`);
      return out;
    } finally {
      ended();
    }
  }

  async #put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const ids = this.#ids(config);
    await this.leases?.ensure(ids.stream, ids.threadId, false);
    const tip = this.#tips.get(ids.stream);
    // The writes of the checkpoint this put leaves land before it freezes them (writes-in-flight.ts).
    if (tip?.label) await this.#writing.settled(ids.stream, tip.label);
    let base: Tip & { linear: boolean };
    if (tip && tip.label === (ids.id === undefined ? null : labelOf(ids.id))) {
      base = { ...tip, linear: true };
    } else if (ids.id === undefined) {
      base = { label: null, seq: 0, stateDigest: EMPTY_DIGEST, state: {}, linear: false };
    } else {
      const at = await this.client.getCheckpointTuple(ids.stream, { label: labelOf(ids.id) });
      base = {
        label: at.checkpoint?.label ?? labelOf(ids.id),
        seq: at.seq,
        stateDigest: at.stateDigest,
        state: at.state as StreamState,
        linear: false,
      };
    }
    const { channel_values, ...rest } = checkpoint;
    const baseValues = (base.state.values ?? {}) as Record<string, Json>;
    const values = { ...baseValues };
    const changed: string[] = [];
    for (const channel of Object.keys(newVersions)) {
      if (channel in channel_values) {
        values[channel] = (await this.#encode(channel_values[channel])) as unknown as Json;
        changed.push(channel);
      } else delete values[channel];
    }
    // A checkpoint of an older schema: its other channels are written in the new shape too.
    const from = this.#schema.versionOf(base.state);
    for (const channel of from < this.#schema.version ? Object.keys(values) : []) {
      if (changed.includes(channel)) continue;
      const value = await this.#decode(values[channel] as unknown as Encoded);
      values[channel] = (await this.#encode(
        this.#schema.upcast(channel, value, from),
      )) as unknown as Json;
      changed.push(channel);
    }
    const held = await this.#largeByRef(values, changed, baseValues);
    // A checkpoint holds the channels it versions, as savers that load blobs by version do.
    for (const channel of Object.keys(values)) {
      if (!(channel in checkpoint.channel_versions)) delete values[channel];
    }
    // The graph's shape when opted in (graph-shape.ts); a saver that did not opt in keeps it.
    const graph = (this.#graph as unknown as Json | undefined) ?? base.state.graph;
    const next: StreamState = {
      thread: ids.threadId,
      ns: ids.ns,
      ckpt: JSON.parse(JSON.stringify(rest)) as Json,
      values,
      ...this.#schema.stamp,
      ...(graph === undefined ? {} : { graph }),
    };
    const ops: Array<DeltaOp | SetRefOp> = diffJson(base.state, next);
    for (const ref of held) {
      ops.push({ op: 'set', path: HELD, ref }, { op: 'delete', path: HELD });
    }
    const label = labelOf(checkpoint.id);
    const [, metaBytes] = await this.serde.dumpsTyped(metadata);
    const meta = JSON.parse(new TextDecoder().decode(metaBytes)) as Json;
    try {
      const res = await this.client.checkpoint(
        ids.stream,
        {
          ops: ops.length > 0 ? ops : [{ op: 'set', path: '/ckpt', value: next.ckpt as Json }],
          baseDigest: base.stateDigest,
          label,
          meta,
          ...(base.label === null ? {} : { parentLabel: base.label }),
          ...(base.linear ? {} : { baseSeq: base.seq }),
          ...this.#schema.stamp,
        },
        KEYLESS,
      );
      this.#tips.set(ids.stream, {
        label,
        seq: res.seq,
        stateDigest: res.stateDigest,
        state: next,
      });
    } catch (err) {
      if (err instanceof HefestoApiError && err.code === 'ErrDivergenceDetected' && base.linear) {
        this.#tips.delete(ids.stream);
        throw new StaleThreadError(ids.threadId, err);
      }
      if (!(err instanceof HefestoApiError && err.code === 'ErrLabelExists')) throw err;
    }
    return {
      configurable: {
        thread_id: ids.threadId,
        checkpoint_ns: ids.ns,
        checkpoint_id: checkpoint.id,
      },
    };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = '',
  ): Promise<void> {
    const ids = this.#ids(config);
    if (ids.id === undefined)
      throw new Error('Missing "checkpoint_id" field in config.configurable.');
    const call = this.#putWrites({ ...ids, id: ids.id }, writes, taskId, taskPath);
    await this.#writing.track(ids.stream, labelOf(ids.id), call);
  }

  async #putWrites(
    ids: { threadId: string; stream: string; id: string },
    writes: PendingWrite[],
    taskId: string,
    taskPath: string,
  ): Promise<void> {
    await this.leases?.ensure(ids.stream, ids.threadId, false);
    const encoded = await Promise.all(
      writes.map(async ([channel, value], idx) => ({
        idx: WRITES_IDX_MAP[channel] ?? idx,
        channel,
        value: { ...(await this.#encode(value)), ...this.#schema.writeStamp } as unknown as Json,
      })),
    );
    const key = `${ids.stream}#${ids.id}`;
    for (let i = 0; i < encoded.length; i += 100) {
      const slice = encoded.slice(i, i + 100);
      const sizes = slice.map((w) => canonicalBytes(w.value));
      const picked = pickByRef(sizes, this.#largeValueBytes, INLINE_BUDGET_BYTES);
      const sent = await Promise.all(
        slice.map(async (w, j) => {
          if (!picked.has(j)) return w;
          const ref = await this.client.putValue(w.value);
          return { idx: w.idx, channel: w.channel, ref: { hash: ref.hash, size: ref.size } };
        }),
      );
      const task = { taskId, taskPath, writes: sent };
      // The label may still be on its way (see put): wait for it, about 10 s, and for as long
      // as this saver's puts of the thread keep landing (a queue of puts on a slow store).
      for (let attempt = 0; ; attempt++) {
        try {
          await this.client.putPendingWrites(ids.stream, labelOf(ids.id), task);
          break;
        } catch (err) {
          if (!notFound(err)) throw err;
          if (attempt >= 10 && !this.#puts.progressing(ids.stream, PUT_QUIET_MS)) throw err;
          if (attempt >= MAX_LABEL_WAITS) throw err;
          await this.#puts.wait(key, Math.min(25 * 2 ** attempt, 2_000));
        }
      }
    }
  }

  async #streams(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.client.listStreams({ prefix, after, limit: 1000 });
      out.push(...page.streams.map((s) => s.streamId));
      if (page.next === null) return out;
      after = page.next;
    }
  }

  async *list(
    config: RunnableConfig,
    options: CheckpointListOptions = {},
  ): AsyncGenerator<CheckpointTuple> {
    const c = config.configurable ?? {};
    const threadId = c.thread_id as string | undefined;
    const ns = c.checkpoint_ns as string | undefined;
    if (threadId !== undefined && ns !== undefined) {
      const pages = this.#pages(threadId, ns, options);
      const first = await pages.next();
      if (first.value !== undefined) {
        yield* first.value;
        for await (const page of pages) yield* page;
        return;
      }
    }
    let streams =
      threadId !== undefined && ns !== undefined
        ? [streamIdOf(this.prefix, threadId, ns)]
        : await this.#streams(
            threadId === undefined ? `${this.prefix}.` : threadPrefix(this.prefix, threadId),
          );
    if (threadId === undefined && ns !== undefined) {
      const tail = streamIdOf('', '', ns).slice(2);
      streams = streams.filter((s) => s.slice(s.lastIndexOf('.') + 1) === tail);
    }
    const before = options.before?.configurable?.checkpoint_id as string | undefined;
    const meta: Record<string, Json> = {};
    for (const [k, v] of Object.entries(options.filter ?? {}))
      if (v !== undefined) meta[k] = v as Json;
    const found: Array<{ stream: string; id: string; seq: number }> = [];
    for (const stream of streams) {
      let cursor: number | undefined;
      let n = 0;
      for (;;) {
        let page: Awaited<ReturnType<HefestoClient['listCheckpoints']>>;
        try {
          page = await this.client.listCheckpoints(stream, { before: cursor, limit: 100, meta });
        } catch (err) {
          if (notFound(err)) break;
          throw err;
        }
        for (const e of page.checkpoints) {
          const id = checkpointIdOf(e.label);
          if (before !== undefined && !(id < before)) continue;
          found.push({ stream, id, seq: e.seq });
          n++;
        }
        if (page.next === null || (options.limit !== undefined && n >= options.limit)) break;
        cursor = page.next;
      }
    }
    found.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const picked = options.limit === undefined ? found : found.slice(0, options.limit);
    for (const f of picked) {
      const state = await this.client.getState(f.stream, { at: f.seq });
      const s = state.state as StreamState;
      const label = await this.client.getCheckpoint(f.stream, labelOf(f.id));
      const tn = { threadId: '', ns: '', stream: f.stream };
      const tuple = await this.#tuple(tn, label, s);
      const ids = tuple.config.configurable ?? {};
      const own = await this.#threadOf(f.stream, streams, threadId, ns);
      tuple.config = { configurable: { ...ids, thread_id: own.threadId, checkpoint_ns: own.ns } };
      if (tuple.parentConfig) {
        tuple.parentConfig = {
          configurable: {
            ...tuple.parentConfig.configurable,
            thread_id: own.threadId,
            checkpoint_ns: own.ns,
          },
        };
      }
      yield tuple;
    }
  }

  /**
   * One thread's list from `GET .../tuples`, a page (up to 100 tuples, states and writes) per
   * request. The server pages by seq, the list's order is by checkpoint id: they agree for the
   * ids LangGraph makes (uuid6, in time order). Where the first page shows they do not (ids out
   * of order), or `before` is not in the thread, it ends without a page and the list is read
   * entry by entry as before; a later page is yielded in seq order.
   */
  async *#pages(
    threadId: string,
    ns: string,
    options: CheckpointListOptions,
  ): AsyncGenerator<CheckpointTuple[], void> {
    const stream = streamIdOf(this.prefix, threadId, ns);
    const before = options.before?.configurable?.checkpoint_id as string | undefined;
    const meta: Record<string, Json> = {};
    for (const [k, v] of Object.entries(options.filter ?? {}))
      if (v !== undefined) meta[k] = v as Json;
    const ids = { threadId, ns, stream };
    let cursor: number | undefined;
    let last = before;
    let left = options.limit ?? Number.POSITIVE_INFINITY;
    for (let first = true; left > 0; first = false) {
      let page: Awaited<ReturnType<HefestoClient['listCheckpointTuples']>>;
      try {
        page = await this.client.listCheckpointTuples(stream, {
          ...(cursor !== undefined
            ? { before: cursor }
            : before === undefined
              ? {}
              : { beforeLabel: labelOf(before) }),
          limit: Math.min(100, left),
          meta,
        });
      } catch (err) {
        if (!notFound(err)) throw err;
        // No such thread: nothing to list; a `before` it does not hold: read as before.
        if (first && before === undefined) yield [];
        return;
      }
      const out: CheckpointTuple[] = [];
      for (const t of page.tuples) {
        const id = checkpointIdOf(t.checkpoint.label);
        if (first && last !== undefined && !(id < last)) return;
        last = id;
        out.push(await this.#tuple(ids, t.checkpoint, t.state as StreamState, t.writes));
      }
      left -= out.length;
      yield out;
      if (page.next === null) return;
      cursor = page.next;
    }
  }

  /** The thread and namespace of a stream this saver wrote: kept in its state's `ckpt`. */
  async #threadOf(stream: string, _streams: string[], threadId?: string, ns?: string) {
    if (threadId !== undefined && ns !== undefined) return { threadId, ns };
    const head = (await this.client.getState(stream)).state as StreamState;
    return { threadId: String(head.thread ?? ''), ns: String(head.ns ?? '') };
  }

  async deleteThread(threadId: string): Promise<void> {
    await this.leases?.release(threadId);
    for (const stream of await this.#streams(threadPrefix(this.prefix, threadId))) {
      this.#tips.delete(stream);
      await this.client.deleteStream(stream).catch((err: unknown) => {
        if (!notFound(err)) throw err;
      });
    }
  }
}
