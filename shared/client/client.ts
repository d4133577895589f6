import { genesisHash } from '../domain/event.js';
import { appliesOps, FORK_EVENT } from '../domain/state.js';
import { verifyEvents } from '../domain/verify.js';
import type {
  CheckpointDelta,
  CheckpointLabel,
  CheckpointList,
  PendingWrite,
  PendingWriteInput,
  StreamList,
} from './checkpoint-types.js';
import { ProofChecker } from './client-proofs.js';
import { ClientVerificationError, HefestoApiError } from './errors.js';
import { provenHistory } from './history-proof.js';
import type { HistoryChange, HistoryChangeResult, HistoryPage } from './history-types.js';
import { type CallResult, type RetryPolicy, Transport } from './http.js';
import {
  type SetRefOp,
  type ValueRef,
  ValueTransfer,
  type ValueTransferOptions,
} from './large-values.js';
import { checkClientOptions } from './options.js';
import { type LargeValueCheckpoint, setLargeValue } from './set-value.js';
import { provenValue, stateMatches } from './state-proofs.js';
import type { TrustStore } from './trust-store.js';
import { defaultTrustStorePath, FileTrustStore } from './trust-store-file.js';
import { TrustedPoints } from './trusted-points.js';
import {
  type ChannelHistory,
  type CheckpointTuple,
  type HeldState,
  pageStates,
  type TupleBody,
  type TuplePage,
  tupleState,
} from './tuples.js';
import type {
  AppendResult,
  BeginResult,
  CheckpointResult,
  CreatedKey,
  DeltaOp,
  DrainResult,
  EffectIntent,
  EventInput,
  EventsPage,
  FinishedEffect,
  ForkResult,
  Json,
  Lease,
  LedgerEvent,
  SagaCompensation,
  Scope,
  StateResult,
  StateValue,
  StreamHead,
  VerifyResult,
  WriteOptions,
} from './types.js';

/**
 * Options of {@link HefestoClient}.
 *
 * @example
 * ```ts
 * const options: HefestoClientOptions = {
 *   baseUrl: 'http://localhost:8787',
 *   apiKey: process.env.HEFESTO_KEY,
 *   tenant: 'default',
 *   verify: true,
 * };
 * ```
 */
export interface HefestoClientOptions {
  /** The service URL, e.g. http://localhost:8787 or the API Gateway URL. */
  baseUrl: string;
  /**
   * The API key. Typed to take `process.env.HEFESTO_KEY` as it is: a missing key throws
   * InvalidOptionsError at construction.
   */
  apiKey: string | undefined;
  /** The key's tenant; needed to verify chains from their genesis. Default `default`. */
  tenant?: string;
  /**
   * Recompute the hash chain of every event read, trusting neither server nor bucket, and
   * check the server's signed tree heads: every receipt, and on every read consistency from
   * the last head this client trusted (client-proofs.ts).
   */
  verify?: boolean;
  /** Where trusted heads are kept (with `verify`). Default: a file, `defaultTrustStorePath()`. */
  trustStore?: TrustStore;
  /**
   * Streams sealed at rest (docs/privacy.md): bind each payload read to the chain with the
   * stream's commitment key, fetched from the server with this key's `read` scope (default
   * true). False: verify their headers only (the chain, the tree), as an auditor without keys.
   */
  bindPayloads?: boolean;
  retry?: RetryPolicy;
  /** Per attempt, ms. Default 30 s. */
  timeoutMs?: number;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** New Idempotency-Keys (default: crypto.randomUUID). */
  newIdempotencyKey?: () => string;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /** The largest value {@link HefestoClient.putValue} uploads (the server's). Default 64 MiB. */
  maxValueBytes?: number;
}

export type { WriteOptions } from './types.js';

/**
 * A typed client for every route of the Hefesto API, with retries (backoff and jitter on
 * 429, 5xx and network errors, each logical write keeping one Idempotency-Key across its
 * attempts), typed errors carrying the server's `code`, and optional client-side chain
 * verification.
 *
 * Verification needs `node:crypto` (Node 20+, Bun, Deno); everything else needs only fetch.
 *
 * @example
 * ```ts
 * const client = new HefestoClient({ baseUrl: 'http://localhost:8787', apiKey, verify: true });
 * await client.append('run-1', [{ type: 'observation', payload: { text: 'hi' } }]);
 * const { events } = await client.readEvents('run-1');
 * ```
 */
export class HefestoClient {
  readonly tenant: string;
  readonly #http: Transport;
  readonly #verify: boolean;
  readonly #newKey: () => string;
  readonly #trusted = new TrustedPoints();
  readonly #fences = new Map<string, number>();
  /** The incarnation of each stream this client last saw (sent as Hefesto-Incarnation). */
  readonly #lives = new Map<string, string>();
  readonly #proofs: ProofChecker | undefined;
  readonly #values: ValueTransfer;
  /** Per stream, the check of its trusted head before this client's first write to it. */
  readonly #writeChecks = new Map<string, Promise<void>>();
  readonly #bindPayloads: boolean;
  /** Per stream sealed at rest, its commitment key (docs/privacy.md, Decision 1). */
  readonly #commitKeys = new Map<string, Promise<Uint8Array>>();

  constructor(options: HefestoClientOptions) {
    checkClientOptions(options);
    this.tenant = options.tenant ?? 'default';
    this.#verify = options.verify ?? false;
    this.#bindPayloads = options.bindPayloads ?? true;
    this.#newKey = options.newIdempotencyKey ?? (() => crypto.randomUUID());
    this.#http = new Transport({ ...options, apiKey: options.apiKey as string });
    this.#values = new ValueTransfer(this.#http, options.maxValueBytes);
    this.#proofs = this.#verify
      ? new ProofChecker({
          baseUrl: options.baseUrl,
          tenant: this.tenant,
          trustStore: options.trustStore ?? new FileTrustStore(defaultTrustStorePath()),
          get: async (path, query) => (await this.#http.call('GET', path, { query })).body,
        })
      : undefined;
  }

  /**
   * Appends events as one batch. With `expectedSeq`, only if the stream is at that seq.
   *
   * @example
   * ```ts
   * const { firstSeq, head } = await client.append('run-1', [{ type: 'tool.result', payload: 42 }]);
   * ```
   */
  async append(
    streamId: string,
    events: EventInput[],
    options: WriteOptions & { expectedSeq?: number } = {},
  ): Promise<AppendResult & { replayed: boolean }> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/events`;
    const res = await this.#inLife(streamId, options, (incarnation) =>
      this.#http.call<AppendResult>('POST', path, {
        body:
          options.expectedSeq === undefined
            ? { events }
            : { events, expectedSeq: options.expectedSeq },
        idempotencyKey: options.idempotencyKey ?? this.#newKey(),
        fence: this.#fences.get(streamId),
        incarnation,
      }),
    );
    await this.#proofs?.checkReceipt(streamId, res.body.treeHead);
    return { ...res.body, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * The stream's chain head.
   *
   * @example
   * ```ts
   * const { seq, hash } = await client.getStream('run-1');
   * ```
   */
  async getStream(streamId: string): Promise<StreamHead> {
    try {
      const { body } = await this.#http.call<StreamHead>('GET', `/v1/streams/${enc(streamId)}`);
      if (body.incarnation !== undefined) this.#lives.set(streamId, body.incarnation);
      return body;
    } catch (err) {
      if (err instanceof HefestoApiError && err.code === 'ErrStreamNotFound') {
        this.#lives.delete(streamId);
      }
      throw err;
    }
  }

  /**
   * The incarnation this client last saw for `streamId` (sent with its writes), if any.
   *
   * @example
   * ```ts
   * await client.append('run-1', events);
   * const life = client.incarnationOf('run-1'); // the life those events were written in
   * ```
   */
  incarnationOf(streamId: string): string | undefined {
    return this.#lives.get(streamId);
  }

  /**
   * One write of a stream under its incarnation (the caller's, or the last one seen): learns
   * the one answered, and forgets it when the stream's life ended (ErrStreamRecreated).
   */
  async #inLife<T extends { incarnation?: string }>(
    streamId: string,
    options: WriteOptions,
    write: (incarnation: string | undefined) => Promise<CallResult<T>>,
  ): Promise<CallResult<T>> {
    try {
      const res = await write(options.incarnation ?? this.#lives.get(streamId));
      if (res.body.incarnation !== undefined) this.#lives.set(streamId, res.body.incarnation);
      return res;
    } catch (err) {
      if (err instanceof HefestoApiError && err.code === 'ErrStreamRecreated') {
        this.#lives.delete(streamId);
      }
      throw err;
    }
  }

  /**
   * One page of events from `from` (default 1). With `verify`, every event is checked
   * against the chain from the last point this client trusted (genesis at first).
   *
   * @example
   * ```ts
   * let page = await client.readEvents('run-1', { from: 1, limit: 500 });
   * while (page.next !== null) page = await client.readEvents('run-1', { from: page.next });
   * ```
   */
  async readEvents(
    streamId: string,
    options: { from?: number; limit?: number; type?: string } = {},
  ): Promise<EventsPage> {
    if (!this.#verify) return this.#page(streamId, options);
    const from = options.from ?? 1;
    const limit = options.limit ?? 100;
    await this.#trustUpTo(streamId, from - 1);
    const out: LedgerEvent[] = [];
    let last: LedgerEvent | undefined;
    let next: number | null = from;
    // Filtered reads skip seqs, and a chain cannot be verified with holes: read everything
    // and filter here.
    while (next !== null && out.length < limit) {
      const page = await this.#page(streamId, {
        from: next,
        limit: options.type ? 1000 : limit - out.length,
      });
      await this.#check(streamId, page.events);
      last = page.events.at(-1) ?? last;
      for (const e of page.events) {
        if (out.length >= limit) {
          next = e.seq;
          break;
        }
        if (options.type === undefined || e.type === options.type) out.push(e);
        next = page.next;
      }
      if (page.events.length === 0) next = null;
    }
    await this.#proofs?.checkRead(streamId, last);
    return { events: out, next };
  }

  /**
   * Every event from `from` on, page by page; with `follow`, keeps polling for new ones
   * (every `pollMs`, default 1 s) until the signal aborts.
   *
   * @example
   * ```ts
   * for await (const event of client.events('run-1', { follow: true, signal })) console.log(event.seq);
   * ```
   */
  async *events(
    streamId: string,
    options: {
      from?: number;
      type?: string;
      follow?: boolean;
      pollMs?: number;
      signal?: AbortSignal;
    } = {},
  ): AsyncGenerator<LedgerEvent> {
    let from = options.from ?? 1;
    for (;;) {
      if (options.signal?.aborted) return;
      const page = await this.readEvents(streamId, { from, limit: 1000, type: options.type });
      for (const e of page.events) yield e;
      if (page.next !== null) {
        from = page.next;
        continue;
      }
      const last = page.events.at(-1);
      if (last) from = last.seq + 1;
      if (!options.follow) return;
      await new Promise((r) => setTimeout(r, options.pollMs ?? 1000));
    }
  }

  /**
   * The server's verification of the whole chain.
   *
   * @example
   * ```ts
   * const result = await client.verify('run-1');
   * if (!result.ok) console.error('tampered at', result.firstBadSeq);
   * ```
   */
  async verify(streamId: string): Promise<VerifyResult> {
    return (await this.#http.call<VerifyResult>('GET', `/v1/streams/${enc(streamId)}/verify`)).body;
  }

  /**
   * Verifies the whole chain on this side: reads every event, recomputes every hash from
   * genesis, and checks the end against the head the server reports. With `verify`, also
   * against the signed tree head: its tree must hold the last event and extend the head this
   * client trusted (the trust store), else `TamperedHistoryError` (truncated or rewritten).
   *
   * @example
   * ```ts
   * const result = await client.verifyLocally('run-1', (seq, of) => process.stdout.write(`${seq}/${of}\r`));
   * ```
   */
  async verifyLocally(
    streamId: string,
    onProgress?: (seq: number, of: number) => void,
  ): Promise<VerifyResult> {
    const head = await this.getStream(streamId);
    let point = { seq: 0, hash: genesisHash(this.tenant, streamId) };
    let from = 1;
    while (from <= head.seq) {
      const page = await this.#page(streamId, { from, limit: 1000 });
      const result = verifyEvents(
        page.events as never,
        point,
        await this.#binding(streamId, page.events),
      );
      if (!result.ok)
        return { ok: false, code: 'ErrTamperedLedger', firstBadSeq: result.firstBadSeq };
      point = { seq: result.seq, hash: result.hash };
      onProgress?.(point.seq, head.seq);
      if (page.events.length === 0) break;
      from = point.seq + 1;
    }
    if (point.seq !== head.seq || point.hash !== head.hash) {
      return { ok: false, code: 'ErrTamperedLedger', firstBadSeq: point.seq + 1 };
    }
    this.#trusted.add(streamId, point.seq, point.hash);
    await this.#proofs?.checkRead(streamId, point.seq === 0 ? undefined : point);
    return { ok: true, seq: point.seq, hash: point.hash };
  }

  /**
   * Writes a delta checkpoint: SET/DELETE ops from the state whose digest is `baseDigest`,
   * optionally labelled, with meta, or branching from `baseSeq` ({@link CheckpointDelta}).
   *
   * @example
   * ```ts
   * const { stateDigest } = await client.checkpoint('run-1', {
   *   ops: [{ op: 'set', path: '/turn', value: 2 }],
   *   baseDigest,
   * });
   * ```
   */
  async checkpoint(
    streamId: string,
    delta:
      | CheckpointDelta
      | { ops: Array<DeltaOp | SetRefOp>; baseDigest: string; stateDigest?: string },
    options: WriteOptions = {},
  ): Promise<CheckpointResult & { replayed: boolean }> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/checkpoints`;
    // Keyless (see WriteOptions): still repeatable, the label making a retry harmless.
    const keyless =
      options.idempotencyKey === null && 'label' in delta && delta.label !== undefined;
    const res = await this.#inLife(streamId, options, (incarnation) =>
      this.#http.call<CheckpointResult>('POST', path, {
        body: delta,
        ...(keyless
          ? { repeatable: true }
          : { idempotencyKey: options.idempotencyKey ?? this.#newKey() }),
        fence: this.#fences.get(streamId),
        incarnation,
      }),
    );
    await this.#proofs?.checkReceipt(streamId, res.body.treeHead);
    return { ...res.body, replayed: res.headers.get('idempotent-replayed') === 'true' };
  }

  /**
   * Uploads a value of any size up to `maxValueBytes` (64 MiB) as content-addressed chunks of
   * at most 1 MiB, `concurrency` (4) requests at a time, children before parents, each retry
   * harmless; returns the ref a checkpoint sets it by. A value over the limit is refused with
   * {@link ValueTooLargeError} before any request. The chunks are the tenant's, not a stream's.
   *
   * @example
   * ```ts
   * const ref = await client.putValue(report);
   * await client.checkpoint('run-1', { ops: [{ op: 'set', path: '/report', ref }], baseDigest });
   * ```
   */
  putValue(value: Json, options: ValueTransferOptions = {}): Promise<ValueRef> {
    return this.#values.put(value, options);
  }

  /**
   * Sets `path` to a large value in one checkpoint: {@link putValue}, then a checkpoint whose
   * first op sets the ref (then `delta.ops`, if any), with the delta's base, label, meta,
   * `baseSeq`, the stream's fence and one Idempotency-Key. With `baseState` (the state at
   * `baseDigest`), the state digest the ops must yield is computed here from the value, so
   * the server refuses a checkpoint that would produce another state (ErrDivergenceDetected).
   *
   * @example
   * ```ts
   * const { stateDigest, ref } = await client.setValue('run-1', '/doc', doc, {
   *   baseDigest: state.stateDigest,
   *   baseState: state.state,
   * });
   * ```
   */
  async setValue(
    streamId: string,
    path: string,
    value: Json,
    delta: LargeValueCheckpoint,
    options: WriteOptions & ValueTransferOptions = {},
  ): Promise<CheckpointResult & { replayed: boolean; ref: ValueRef }> {
    return setLargeValue(this, streamId, path, value, delta, options);
  }

  /**
   * A value uploaded by {@link putValue} (or set by ref), read whole from its chunks, each
   * checked against its hash here: a tampered or missing chunk is a ClientVerificationError.
   *
   * @example
   * ```ts
   * const doc = await client.readValue(ref);
   * ```
   */
  readValue(ref: ValueRef | string, options: ValueTransferOptions = {}): Promise<Json> {
    return this.#values.read(ref, options);
  }

  /**
   * The items of a large array value, a page (up to 64 items) at a time, reading only that
   * page's chunks, each checked against the hash its parent names.
   *
   * @example
   * ```ts
   * for await (const page of client.valuePages(ref)) for (const item of page) console.log(item);
   * ```
   */
  valuePages(ref: ValueRef | string, options: ValueTransferOptions = {}): AsyncGenerator<Json[]> {
    return this.#values.pages(ref, options);
  }

  /**
   * A labelled checkpoint: its seq, state digest, meta and parent (one record read).
   *
   * @example
   * ```ts
   * const { seq } = await client.getCheckpoint('run-1', '1ef4f797-8335-6428-8001-8a1503f9b875');
   * const { state } = await client.getState('run-1', { at: seq });
   * ```
   */
  async getCheckpoint(streamId: string, label: string): Promise<CheckpointLabel> {
    const path = `/v1/streams/${enc(streamId)}/checkpoints/${enc(label)}`;
    return (await this.#http.call<CheckpointLabel>('GET', path)).body;
  }

  /**
   * Labelled checkpoints, newest first: before a seq, a page at a time, optionally only
   * those whose meta has the given top-level values.
   *
   * @example
   * ```ts
   * const page = await client.listCheckpoints('run-1', { limit: 20, meta: { source: 'loop' } });
   * if (page.next !== null) await client.listCheckpoints('run-1', { before: page.next });
   * ```
   */
  async listCheckpoints(
    streamId: string,
    options: { before?: number; limit?: number; meta?: Record<string, Json> } = {},
  ): Promise<CheckpointList> {
    const query: Record<string, string | number | undefined> = {
      before: options.before,
      limit: options.limit,
    };
    for (const [k, v] of Object.entries(options.meta ?? {})) query[`meta.${k}`] = JSON.stringify(v);
    const path = `/v1/streams/${enc(streamId)}/checkpoints`;
    return (await this.#http.call<CheckpointList>('GET', path, { query })).body;
  }

  /**
   * Stores pending writes of one task against a checkpoint label. Insert-once for idx >= 0,
   * so the call is safe to retry as it is.
   *
   * @example
   * ```ts
   * await client.putPendingWrites('run-1', label, {
   *   taskId: 'task-7',
   *   writes: [{ idx: 0, channel: 'messages', value: ['hi'] }],
   * });
   * ```
   */
  async putPendingWrites(
    streamId: string,
    label: string,
    task: { taskId: string; taskPath?: string; writes: PendingWriteInput[] },
  ): Promise<{ written: number }> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/checkpoints/${enc(label)}/writes`;
    return (
      await this.#http.call<{ written: number }>('POST', path, {
        body: task,
        repeatable: true,
        fence: this.#fences.get(streamId),
      })
    ).body;
  }

  /**
   * Every pending write of a checkpoint label, sorted by (task path, task id, idx).
   *
   * @example
   * ```ts
   * const { writes } = await client.getPendingWrites('run-1', label);
   * ```
   */
  async getPendingWrites(streamId: string, label: string): Promise<{ writes: PendingWrite[] }> {
    const path = `/v1/streams/${enc(streamId)}/checkpoints/${enc(label)}/writes`;
    return (await this.#http.call<{ writes: PendingWrite[] }>('GET', path)).body;
  }

  /**
   * A page of the tenant's streams in id order, optionally by prefix, after a cursor.
   *
   * @example
   * ```ts
   * let page = await client.listStreams({ prefix: 'lg.', limit: 100 });
   * while (page.next !== null) page = await client.listStreams({ prefix: 'lg.', after: page.next });
   * ```
   */
  async listStreams(
    options: { prefix?: string; after?: string; limit?: number } = {},
  ): Promise<StreamList> {
    return (
      await this.#http.call<StreamList>('GET', '/v1/streams', {
        query: { prefix: options.prefix, after: options.after, limit: options.limit },
      })
    ).body;
  }

  /**
   * Deletes a stream (admin scope): it reads as gone at once; the compactor reclaims it.
   *
   * @example
   * ```ts
   * await admin.deleteStream('run-1');
   * ```
   */
  async deleteStream(streamId: string): Promise<void> {
    await this.#http.call<undefined>('DELETE', `/v1/streams/${enc(streamId)}`, {
      repeatable: true,
    });
    this.#lives.delete(streamId);
  }

  /**
   * The state at the head, or at any past seq. With `verify`, the digest is recomputed here,
   * the event at the state's seq is checked (its hash, and the state digest it records when
   * it is a checkpoint) and proven in the signed tree head, which must extend the head this
   * client trusted (the trust store): a truncated or rewritten history is a
   * `TamperedHistoryError`.
   *
   * @example
   * ```ts
   * const { state, stateDigest } = await client.getState('run-1', { at: 10 });
   * ```
   */
  async getState(streamId: string, options: { at?: number } = {}): Promise<StateResult> {
    const { body } = await this.#http.call<StateResult>(
      'GET',
      `/v1/streams/${enc(streamId)}/state`,
      {
        query: { at: options.at },
      },
    );
    if (this.#verify) await this.#checkState(streamId, body);
    return body;
  }

  /**
   * A checkpoint (`label`, default the head's state), its state and its pending writes in one
   * request, conditional on the state held: with `since`, the server answers `unchanged`
   * (nothing of the state sent), or the deltas after it (applied here to `since.state`, in
   * place), or the state whole. With `verify`, the state is checked as {@link getState}
   * checks it (its digest recomputed, its event proven in the signed tree head).
   *
   * @example
   * ```ts
   * let tip = await client.getCheckpointTuple('run-1');
   * // ... later: only what changed since is sent
   * tip = await client.getCheckpointTuple('run-1', { since: tip });
   * ```
   */
  async getCheckpointTuple(
    streamId: string,
    options: { label?: string; since?: HeldState } = {},
  ): Promise<CheckpointTuple> {
    const { since } = options;
    const { body } = await this.#http.call<TupleBody>('GET', `/v1/streams/${enc(streamId)}/tuple`, {
      query: {
        label: options.label,
        sinceSeq: since?.seq,
        sinceDigest: since?.stateDigest,
      },
    });
    const tuple = tupleState(body, since);
    if (this.#verify) await this.#checkState(streamId, tuple);
    return tuple;
  }

  /**
   * For each channel, its pending writes along the checkpoint's ancestors (parent first, by
   * their parentLabel), oldest first, up to the nearest ancestor whose state holds
   * `{seedAt}/{channel}` (the seed), in one request whatever the depth (LangGraph's
   * getDeltaChannelHistory). Each ancestor's writes are checked by the server against the
   * digest the chain committed for them.
   *
   * @example
   * ```ts
   * const { messages } = await client.getChannelHistory('run-1', {
   *   label,
   *   channels: ['messages'],
   *   seedAt: '/values',
   * });
   * ```
   */
  async getChannelHistory(
    streamId: string,
    options: { label?: string; channels: string[]; seedAt?: string },
  ): Promise<Record<string, ChannelHistory>> {
    const query = new URLSearchParams();
    if (options.label !== undefined) query.set('label', options.label);
    if (options.seedAt !== undefined) query.set('seedAt', options.seedAt);
    for (const ch of options.channels) query.append('channel', ch);
    const path = `/v1/streams/${enc(streamId)}/channel-history?${query}`;
    const { body } = await this.#http.call<{ channels: Record<string, ChannelHistory> }>(
      'GET',
      path,
    );
    return body.channels;
  }

  /**
   * A page of the checkpoint list (newest first, as {@link listCheckpoints}) with each
   * checkpoint's pending writes and state, in one request: the server sends the oldest state
   * whole and each newer one as the deltas since the one before it. `beforeLabel`: below that
   * checkpoint. With `verify`, each state is checked as {@link getState} checks it.
   *
   * @example
   * ```ts
   * const { tuples, next } = await client.listCheckpointTuples('run-1', { limit: 10 });
   * for (const t of tuples) console.log(t.checkpoint.label, t.state, t.writes.length);
   * ```
   */
  async listCheckpointTuples(
    streamId: string,
    options: {
      before?: number;
      beforeLabel?: string;
      limit?: number;
      meta?: Record<string, Json>;
    } = {},
  ): Promise<TuplePage> {
    const query: Record<string, string | number | undefined> = {
      before: options.before,
      beforeLabel: options.beforeLabel,
      limit: options.limit,
    };
    for (const [k, v] of Object.entries(options.meta ?? {})) query[`meta.${k}`] = JSON.stringify(v);
    const path = `/v1/streams/${enc(streamId)}/tuples`;
    const page = pageStates((await this.#http.call<never>('GET', path, { query })).body);
    if (this.#verify) {
      for (const t of page.tuples) {
        await this.#checkState(streamId, { ...t, digestVersion: page.digestVersion });
      }
    }
    return page;
  }

  /** `verify`: the state hashes to its digest, the one its (proven) event records. */
  async #checkState(streamId: string, body: StateResult): Promise<void> {
    if (!stateMatches(body.state, body.stateDigest, body.digestVersion)) {
      throw new ClientVerificationError(body.seq, 'the state does not hash to its digest');
    }
    const event = await this.#signedEvent(streamId, body.seq);
    const recorded = (event?.payload as { stateDigest?: unknown } | null)?.stateDigest;
    const sets = event !== undefined && (appliesOps(event.type) || event.type === FORK_EVENT);
    if (sets && typeof recorded === 'string' && recorded !== body.stateDigest) {
      throw new ClientVerificationError(
        body.seq,
        'the state is not the one its checkpoint records',
      );
    }
  }

  /**
   * The last `limit` items of a session's history (all without `limit`), oldest first: one
   * request, read from the stream's verified state. A session never written has none. With
   * `proof`, the answer carries what this client checks the items against itself (the event
   * that set the state, the Merkle path of the items: history-proof.ts), which without
   * `verify` is the server's word for that event; with `verify` the event is checked to be
   * the head's state-setting event (the events after it read and chained, none setting the
   * state) and the head proven in the signed tree head (two more GETs when the event is the
   * head); a failed check is a ClientVerificationError and returns nothing.
   *
   * @example
   * ```ts
   * const { items } = await client.getHistory('session-1', { limit: 20, proof: true });
   * ```
   */
  async getHistory(
    streamId: string,
    options: { limit?: number; proof?: boolean } = {},
  ): Promise<HistoryPage> {
    const path = `/v1/streams/${enc(streamId)}/history`;
    const { body } = await this.#http.call<HistoryPage>('GET', path, {
      query: { limit: options.limit, ...(options.proof ? { proof: 'true' } : {}) },
    });
    if (!options.proof) return body;
    // A format 2 event: its payload bound with k_c when verifying, else its header checked
    // (without `verify` the event is the server's word anyway).
    const proven = body.proof?.event;
    const binding =
      proven?.format === undefined
        ? {}
        : this.#verify
          ? await this.#binding(streamId, [proven])
          : { headersOnly: true };
    const { items, event, schema } = provenHistory(body, options.limit, binding);
    if (this.#verify && event) await this.#headState(streamId, event, body.seq);
    return { seq: body.seq, items, ...(schema === undefined ? {} : { schema }) };
  }

  /**
   * `verify`: `event` is the head's state-setting event. The events after it up to the head
   * `seq` continue its hash and none sets the state; the head is proven in the signed tree
   * head (extending the trusted one, and no older than the head this client trusted before),
   * else (no tree, or a head before its first leaf) the event is linked to genesis.
   */
  async #headState(streamId: string, event: LedgerEvent, seq: number): Promise<void> {
    if (event.seq < 1) throw new ClientVerificationError(event.seq, 'no event has that seq');
    const trusted = await this.#proofs?.trusted(streamId);
    if (trusted !== undefined && seq < trusted.treeBase + trusted.treeSize) {
      throw new ClientVerificationError(
        seq,
        `the server answered the history at seq ${seq}, older than the head this client trusts`,
      );
    }
    let last: LedgerEvent = event;
    while (last.seq < seq) {
      const page = await this.#page(streamId, {
        from: last.seq + 1,
        limit: Math.min(1000, seq - last.seq),
      });
      const result = verifyEvents(
        page.events as never,
        { seq: last.seq, hash: last.hash },
        await this.#binding(streamId, page.events),
      );
      if (!result.ok) throw new ClientVerificationError(result.firstBadSeq, result.reason);
      const setter = page.events.find((e) => appliesOps(e.type) || e.type === FORK_EVENT);
      if (setter !== undefined) {
        throw new ClientVerificationError(
          setter.seq,
          `event ${setter.seq} sets the state after the one the history was proven by`,
        );
      }
      const end = page.events.at(-1);
      if (end === undefined)
        throw new ClientVerificationError(last.seq + 1, 'the server returned no events');
      last = end;
    }
    if (last.seq !== seq) {
      throw new ClientVerificationError(
        seq,
        `the state was set at ${last.seq}, past the head ${seq}`,
      );
    }
    const head = await this.#proofs?.checkRead(streamId, last);
    // A head outside the signed tree (none, or before its first leaf): the event is linked
    // along the chain from genesis instead, as getVerifiedValue links its checkpoint.
    if (head === undefined || last.seq <= head.treeBase) {
      await this.#trustUpTo(streamId, event.seq - 1);
      await this.#check(streamId, [event]);
    }
  }

  /**
   * One change of a session's history, evaluated by the server against the stored history
   * and written as one conditional append. `operationId` (default: a new one per call, kept
   * across this call's retries) makes it apply once: repeated with the same change it
   * answers `applied: false`, with another it is a 422 `ErrIdempotencyKeyReused`. A
   * replace_suffix whose expectedSuffix no longer matches is a 409 `ErrDivergenceDetected`.
   * `schema`: the version of the items' shape (docs/schema-evolution.md, "Sessions").
   *
   * @example
   * ```ts
   * await client.changeHistory(
   *   'session-1',
   *   { type: 'append_items', items: [{ role: 'user', content: 'hi' }] },
   *   { operationId: 'turn-1' },
   * );
   * ```
   */
  async changeHistory(
    streamId: string,
    change: HistoryChange,
    options: { operationId?: string; schema?: number } = {},
  ): Promise<HistoryChangeResult> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/history`;
    const operationId = options.operationId ?? this.#newKey();
    const schema = options.schema === undefined ? {} : { schema: options.schema };
    const { body } = await this.#inLife(streamId, {}, (incarnation) =>
      this.#http.call<HistoryChangeResult>('POST', path, {
        body: { operationId, change, ...schema },
        fence: this.#fences.get(streamId),
        incarnation,
        // The operation id makes a lost reply safe to send again.
        repeatable: true,
      }),
    );
    await this.#proofs?.checkReceipt(streamId, body.treeHead);
    return body;
  }

  /**
   * One value of the state, by RFC 6901 pointer (`/messages/3`), at the head or at `at`;
   * a path the state does not hold is a 404 `ErrNotFound`. Not checked here: use
   * {@link HefestoClient.getVerifiedValue} for a value proven against the hash chain.
   *
   * @example
   * ```ts
   * const { value } = await client.getValue('run-1', '/messages/3', { at: 12 });
   * ```
   */
  async getValue(
    streamId: string,
    path: string,
    options: { at?: number } = {},
  ): Promise<StateValue> {
    const query = { at: options.at, path };
    return (
      await this.#http.call<StateValue>('GET', `/v1/streams/${enc(streamId)}/state`, { query })
    ).body;
  }

  /**
   * One value of the state, proven (a v2 stream): the server answers the value with its
   * Merkle path, and this client checks it against the state digest recorded by the
   * checkpoint event at `at` (default: the head's last checkpoint), whose hash it verifies
   * along the chain itself, so neither the rest of the state nor trust in the server is
   * needed. `at` must be the seq of a checkpoint (a delta or a fork). A tampered value or
   * proof is a `ClientVerificationError`. With `verify`, the event is also proven in the
   * signed tree head, which must extend the head this client trusted (`TamperedHistoryError`).
   *
   * @example
   * ```ts
   * const message = await client.getVerifiedValue('run-1', '/messages/3');
   * ```
   */
  async getVerifiedValue(
    streamId: string,
    path: string,
    options: { at?: number } = {},
  ): Promise<Json> {
    const at = options.at ?? (await this.getStream(streamId)).stateSeq;
    await this.#trustUpTo(streamId, at - 1);
    const page = await this.#page(streamId, { from: at, limit: 1 });
    const event = page.events[0];
    if (event?.seq !== at) throw new ClientVerificationError(at, `no event at seq ${at}`);
    await this.#check(streamId, [event]);
    const query = { at, path, proof: 'true' };
    const { body } = await this.#http.call<StateValue>(
      'GET',
      `/v1/streams/${enc(streamId)}/state`,
      { query },
    );
    const value = provenValue(body, event, path);
    await this.#proofs?.checkRead(streamId, event);
    return value;
  }

  /**
   * Forks a new stream from the state of `streamId` at `at`.
   *
   * @example
   * ```ts
   * await client.fork('run-1', { newStreamId: 'run-1-retry', at: 12 });
   * ```
   */
  async fork(
    streamId: string,
    fork: { newStreamId: string; at: number },
    options: WriteOptions = {},
  ): Promise<ForkResult> {
    await this.#beforeFirstWrite(fork.newStreamId);
    const res = await this.#http.call<ForkResult>('POST', `/v1/streams/${enc(streamId)}/fork`, {
      body: fork,
      idempotencyKey: options.idempotencyKey ?? this.#newKey(),
    });
    return res.body;
  }

  /**
   * Creates an API key (admin scope; a root key may name any tenant).
   *
   * @example
   * ```ts
   * const { key } = await admin.createKey({ tenant: 'acme', scopes: ['read', 'write'] });
   * ```
   */
  async createKey(request: { tenant?: string; scopes: Scope[] }): Promise<CreatedKey> {
    // No Idempotency-Key on this route: a lost reply is not retried (it could mint two keys).
    return (
      await this.#http.call<CreatedKey>('POST', '/v1/keys', { body: request, repeatable: false })
    ).body;
  }

  /**
   * Revokes an API key.
   *
   * @example
   * ```ts
   * await admin.revokeKey('3f9a1c0b7d2e4a61');
   * ```
   */
  async revokeKey(id: string): Promise<void> {
    await this.#http.call<undefined>('DELETE', `/v1/keys/${enc(id)}`, { repeatable: true });
  }

  /**
   * Sends `epoch` as the fencing token of every write to `streamId` from now on (undefined
   * stops). The harness does this for the lease it holds.
   *
   * @example
   * ```ts
   * const lease = await client.acquireLease('run-1', { owner: 'worker-a', ttlMs: 30_000 });
   * client.setFence('run-1', lease.epoch);
   * ```
   */
  setFence(streamId: string, epoch: number | undefined): void {
    if (epoch === undefined) this.#fences.delete(streamId);
    else this.#fences.set(streamId, epoch);
  }

  /**
   * Acquires the stream's lease with a new epoch (also for the same owner again: a restarted
   * worker fences its predecessor; extend a held lease with {@link renewLease}). Exclusive by
   * default: while held, writes without its epoch as fencing token (see {@link setFence}) are
   * refused with ErrFenced; `exclusive: false` fences only writers that send a token.
   *
   * @example
   * ```ts
   * const { epoch } = await client.acquireLease('run-1', { owner: 'worker-a', ttlMs: 30_000 });
   * client.setFence('run-1', epoch);
   * ```
   */
  async acquireLease(
    streamId: string,
    lease: { owner: string; ttlMs: number; exclusive?: boolean },
  ): Promise<Lease> {
    await this.#beforeFirstWrite(streamId);
    return (
      await this.#http.call<Lease>('POST', `/v1/streams/${enc(streamId)}/lease`, {
        body: lease,
        repeatable: true,
      })
    ).body;
  }

  /**
   * Extends a held lease; ErrFenced when it is no longer this owner's.
   *
   * @example
   * ```ts
   * await client.renewLease('run-1', { owner: 'worker-a', epoch, ttlMs: 30_000 });
   * ```
   */
  async renewLease(
    streamId: string,
    lease: { owner: string; epoch: number; ttlMs: number },
  ): Promise<Lease> {
    return (
      await this.#http.call<Lease>('POST', `/v1/streams/${enc(streamId)}/lease/renew`, {
        body: lease,
        repeatable: true,
      })
    ).body;
  }

  /**
   * Releases a held lease (its epoch is fenced from then on).
   *
   * @example
   * ```ts
   * await client.releaseLease('run-1', { owner: 'worker-a', epoch });
   * ```
   */
  async releaseLease(streamId: string, lease: { owner: string; epoch: number }): Promise<void> {
    await this.#http.call<undefined>('POST', `/v1/streams/${enc(streamId)}/lease/release`, {
      body: lease,
      repeatable: true,
    });
  }

  /**
   * Drains the stream for a hand-over: no new turns, in-flight writes settle, a terminal base
   * snapshot is written, the lease is released.
   *
   * @example
   * ```ts
   * await client.drain('run-1', { owner: 'worker-a', epoch, graceMs: 5000 });
   * ```
   */
  async drain(
    streamId: string,
    drain: { owner: string; epoch: number; graceMs?: number },
  ): Promise<DrainResult> {
    return (
      await this.#http.call<DrainResult>('POST', `/v1/streams/${enc(streamId)}/lease/drain`, {
        body: drain,
        repeatable: true,
      })
    ).body;
  }

  /**
   * Begins a side effect: acquired (run it), completed / failed (its stored outcome),
   * in_progress (retry later) or unknown_outcome (reconcile with the external system first).
   *
   * @example
   * ```ts
   * const begun = await client.beginEffect('run-1', 'pay-17', { kind: 'payment', intent: { cents: 500 } });
   * ```
   */
  async beginEffect(
    streamId: string,
    effectKey: string,
    effect: EffectIntent,
  ): Promise<BeginResult> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/effects/${enc(effectKey)}/begin`;
    return (
      await this.#http.call<BeginResult>('POST', path, {
        body: effect,
        repeatable: true,
        fence: this.#fences.get(streamId),
      })
    ).body;
  }

  /**
   * Completes an effect this caller holds (`holder` from begin); repeats answer the same.
   *
   * @example
   * ```ts
   * await client.completeEffect('run-1', 'pay-17', { holder, result: { receipt: 'r-1' } });
   * ```
   */
  async completeEffect(
    streamId: string,
    effectKey: string,
    done: { holder: string; result: Json },
  ): Promise<FinishedEffect> {
    const path = `/v1/streams/${enc(streamId)}/effects/${enc(effectKey)}/complete`;
    return (
      await this.#http.call<FinishedEffect>('POST', path, {
        body: done,
        repeatable: true,
        fence: this.#fences.get(streamId),
      })
    ).body;
  }

  /**
   * Fails an effect this caller holds; repeats answer the same.
   *
   * @example
   * ```ts
   * await client.failEffect('run-1', 'pay-17', { holder, error: { message: 'card declined' } });
   * ```
   */
  async failEffect(
    streamId: string,
    effectKey: string,
    failed: { holder: string; error: Json },
  ): Promise<FinishedEffect> {
    const path = `/v1/streams/${enc(streamId)}/effects/${enc(effectKey)}/fail`;
    return (
      await this.#http.call<FinishedEffect>('POST', path, {
        body: failed,
        repeatable: true,
        fence: this.#fences.get(streamId),
      })
    ).body;
  }

  /**
   * Begins the compensations of a saga's completed effects, latest first (each exactly once).
   *
   * @example
   * ```ts
   * const { compensations } = await client.compensateSaga('run-1', 'order-17');
   * ```
   */
  async compensateSaga(streamId: string, sagaId: string): Promise<SagaCompensation> {
    await this.#beforeFirstWrite(streamId);
    const path = `/v1/streams/${enc(streamId)}/sagas/${enc(sagaId)}/compensate`;
    return (
      await this.#http.call<SagaCompensation>('POST', path, {
        repeatable: true,
        fence: this.#fences.get(streamId),
      })
    ).body;
  }

  async #page(
    streamId: string,
    options: { from?: number; limit?: number; type?: string },
  ): Promise<EventsPage> {
    return (
      await this.#http.call<EventsPage>('GET', `/v1/streams/${enc(streamId)}/events`, {
        query: { from: options.from, limit: options.limit, type: options.type },
      })
    ).body;
  }

  /**
   * Before this client's first write to a stream (with `verify`): when the trust store holds a
   * signed head of it, the server's head now must extend it, so that nothing lands on a server
   * that no longer holds the history this client verified (its data reset, or rewritten).
   * Once per stream and client; a failed check is tried again by the next write.
   */
  #beforeFirstWrite(streamId: string): Promise<void> {
    if (!this.#proofs) return Promise.resolve();
    let check = this.#writeChecks.get(streamId);
    if (check === undefined) {
      check = this.#proofs.checkBeforeWrite(streamId);
      this.#writeChecks.set(streamId, check);
      check.catch(() => this.#writeChecks.delete(streamId));
    }
    return check;
  }

  /**
   * Event `seq`, its hash recomputed here and proven in the signed tree head (which must
   * extend the trusted one): one page of one event, the tree head and one inclusion proof, not
   * the chain from genesis. A stream with no tree (never trusted) is checked by its hash alone.
   */
  async #signedEvent(streamId: string, seq: number): Promise<LedgerEvent | undefined> {
    if (seq === 0) {
      await this.#proofs?.checkRead(streamId, undefined);
      return undefined;
    }
    const event = (await this.#page(streamId, { from: seq, limit: 1 })).events[0];
    if (event?.seq !== seq) throw new ClientVerificationError(seq, `no event at seq ${seq}`);
    const known = this.#trusted.get(streamId, seq);
    const prev = seq === 1 ? genesisHash(this.tenant, streamId) : event.prevHash;
    const result = verifyEvents(
      [event] as never,
      { seq: seq - 1, hash: prev },
      await this.#binding(streamId, [event]),
    );
    if (!result.ok) throw new ClientVerificationError(result.firstBadSeq, result.reason);
    if (known !== undefined && known !== event.hash) {
      throw new ClientVerificationError(seq, 'the event is not the one this client verified');
    }
    const head = await this.#proofs?.checkRead(streamId, event);
    if (head !== undefined && seq > head.treeBase) this.#trusted.add(streamId, seq, event.hash);
    return event;
  }

  /** Makes sure the hash of event `seq` is trusted, reading and verifying up to it. */
  async #trustUpTo(streamId: string, seq: number): Promise<void> {
    if (seq === 0 || this.#trusted.get(streamId, seq) !== undefined) return;
    let from = this.#trusted.below(streamId, seq)?.seq ?? 0;
    while (from < seq) {
      const page = await this.#page(streamId, {
        from: from + 1,
        limit: Math.min(1000, seq - from),
      });
      if (page.events.length === 0)
        throw new ClientVerificationError(from + 1, 'the server returned no events');
      await this.#check(streamId, page.events);
      from = page.events.at(-1)?.seq ?? seq;
    }
  }

  /** Verifies events continuing a trusted point, and trusts their end. */
  async #check(streamId: string, events: LedgerEvent[]): Promise<void> {
    const first = events[0];
    if (!first) return;
    const prev = first.seq - 1;
    const anchor =
      prev === 0 ? genesisHash(this.tenant, streamId) : this.#trusted.get(streamId, prev);
    if (anchor === undefined)
      throw new ClientVerificationError(first.seq, 'no trusted point before it');
    const result = verifyEvents(
      events as never,
      { seq: prev, hash: anchor },
      await this.#binding(streamId, events),
    );
    if (!result.ok) throw new ClientVerificationError(result.firstBadSeq, result.reason);
    this.#trusted.add(streamId, result.seq, result.hash);
  }

  /**
   * How format 2 events (sealed at rest, docs/privacy.md) are verified: their payloads bound
   * to the chain with the stream's commitment key (GET …/keys/commitment, fetched once per
   * stream and kept), or, with `bindPayloads: false`, their headers only (an auditor's check:
   * the payloads shown are then the server's word). Clear events need nothing.
   */
  async #binding(
    streamId: string,
    events: readonly LedgerEvent[],
  ): Promise<{ commitKey?: Uint8Array; headersOnly?: boolean }> {
    if (!events.some((e) => e.format !== undefined)) return {};
    if (!this.#bindPayloads) return { headersOnly: true };
    let key = this.#commitKeys.get(streamId);
    if (key === undefined) {
      key = this.#http
        .call<{ commitKey: string }>('GET', `/v1/streams/${enc(streamId)}/keys/commitment`)
        .then(({ body }) => Uint8Array.from(Buffer.from(body.commitKey, 'base64url')));
      this.#commitKeys.set(streamId, key);
      key.catch(() => this.#commitKeys.get(streamId) === key && this.#commitKeys.delete(streamId));
    }
    return { commitKey: await key };
  }
}

const enc = encodeURIComponent;
