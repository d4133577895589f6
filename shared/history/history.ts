import { historyOperationKey } from '../chain/storage-keys.js';
import type { Appender, AppendOutcome, ChainHead } from '../commit/append.js';
import type { JsonValue } from '../domain/canonical.js';
import {
  DivergenceError,
  IdempotencyKeyReusedError,
  NotFoundError,
  SchemaTooNewError,
  SchemaTooOldError,
  StreamNotFoundError,
  UnavailableError,
} from '../domain/errors.js';
import type { LedgerEvent } from '../domain/event.js';
import type { SignedTreeHead } from '../domain/signed-head.js';
import type { JsonObject } from '../domain/state.js';
import { digestVersionOf } from '../domain/state-digest.js';
import type { StateProof } from '../domain/state-v2/proof.js';
import type { RecordStore } from '../ports/record-store.js';
import type { Checkpointer } from '../state/checkpoint.js';
import { clearUncut, cutAtClear } from '../state/clear-cut.js';
import type { MemoryAccount } from '../state/memory-pool.js';
import type { StateStore } from '../state/state.js';
import { readStateValue } from '../state/state-read.js';
import {
  changeDigest,
  EMPTY_HISTORY,
  type HistoryChange,
  historyOf,
  historySchemaOf,
  operationIdHash,
  planChange,
  type SessionHistory,
} from './history-model.js';

/** What lets a client check a history read (read with `proof`). */
export type HistoryProof = {
  /** The event that set the state the items are read from (at the head's stateSeq). */
  event: LedgerEvent;
} & (
  | {
      /** The Merkle path of `/items` in that state (its value: the whole history). */
      state: StateProof;
    }
  | {
      /** A stream on state digest v1 (no proof by path): the whole state that event digests. */
      whole: JsonObject;
    }
);

export interface HistoryDeps {
  appender: Appender;
  checkpoints: Checkpointer;
  states: StateStore;
  records: RecordStore;
}

export interface HistoryChangeRequest {
  tenant: string;
  stream: string;
  change: HistoryChange;
  /** Stable across the retries of one change: the change is applied once. */
  operationId?: string;
  /** The writer's lease epoch (Hefesto-Fencing-Token), checked in the commit. */
  fence?: number;
  /** The stream's incarnation the change was first sent to (Hefesto-Incarnation). */
  incarnation?: string;
  /**
   * The schema version of the change's items (docs/schema-evolution.md, "Sessions"); absent: 1.
   * It must be the history's: an older writer is refused (ErrSchemaTooNew), a newer one
   * migrates the history first (400 until it has).
   */
  schema?: number;
  memory?: MemoryAccount;
}

export interface HistoryOutcome {
  /** The seq of the delta that made the change (the head's when nothing was written). */
  seq: number;
  /** false: the operation id was applied before (or the change changes nothing). */
  applied: boolean;
  /** The item a pop removed (a replayed pop: the one it removed then). */
  popped?: JsonValue;
  /** The receipt: the signed tree head after the change (a replay: the original one). */
  treeHead?: SignedTreeHead;
  /** The stream's incarnation the change was committed in. */
  incarnation?: string;
}

/** Times a change is planned again because the history moved under it. */
const MAX_ATTEMPTS = 8;

/**
 * Session histories (history-model.ts): a read of the last `limit` items, and changes,
 * each evaluated here against the stored history and written as one conditional append.
 *
 *   1. Read the head, then the history at it (the warm state, else hydrated and verified).
 *   2. With an operation id: read its record under the history's life (a clear's also under
 *      the life it ended). Found with the same change digest: answer it, write nothing; with
 *      another: ErrIdempotencyKeyReused (422), nothing written.
 *   3. Plan the delta (a replace_suffix whose expectedSuffix does not match: 409
 *      ErrDivergenceDetected, nothing written).
 *   4. Checkpoint it on the state digest read in 1, with the operation's record in the same
 *      commit (append.ts step 3): if the history moved since 1, the checkpoint is refused
 *      and the change is planned again from 1 on the history as it is now, so two writers
 *      never interleave: the stale one's suffix no longer matches.
 * Dies after any step: nothing or the whole change is written; a retry with the same
 * operation id finds its record (or its segment, rolled forward by the appender) in 2.
 */
export class HistoryService {
  constructor(readonly deps: HistoryDeps) {}

  /**
   * The last `limit` items (all without one), in order; a session never written is empty.
   * With `proof`, also what lets a client check them against the chain itself: the event
   * that set the head's state (its hash recomputable, provable in a signed tree head) and
   * the Merkle path of `/items` in that state, whose value is the whole history.
   */
  async read(
    tenant: string,
    stream: string,
    options: { limit?: number; memory?: MemoryAccount; proof?: boolean } = {},
  ): Promise<{ items: JsonValue[]; seq: number; schema?: number; proof?: HistoryProof }> {
    const { limit } = options;
    if (options.proof) return this.#proven(tenant, stream, options);
    if (limit !== undefined && limit <= 0) return { items: [], seq: 0 };
    let value: Awaited<ReturnType<typeof readStateValue>>;
    try {
      value = await readStateValue(
        this.deps.states,
        { tenant, stream, path: '/items', memory: options.memory },
        { cache: this.deps.checkpoints.cache },
      );
    } catch (err) {
      // A stream never written, or one no history change wrote (it holds no /items).
      if (err instanceof StreamNotFoundError) return { items: [], seq: 0 };
      if (err instanceof NotFoundError)
        return { items: [], seq: (await this.#head(tenant, stream)).seq };
      throw err;
    }
    const items = Array.isArray(value.value) ? value.value : [];
    const schema = await this.#schemaAt(tenant, stream, value.seq, options.memory);
    return {
      items: limit === undefined ? items : items.slice(-limit),
      seq: value.seq,
      ...(schema > 1 ? { schema } : {}),
    };
  }

  /** The schema version of the items at `seq` (its state's `/schema`; 1 when none). */
  async #schemaAt(tenant: string, stream: string, at: number, memory?: MemoryAccount) {
    try {
      const { value } = await readStateValue(
        this.deps.states,
        { tenant, stream, at, path: '/schema', memory },
        { cache: this.deps.checkpoints.cache },
      );
      return historySchemaOf(value);
    } catch (err) {
      if (err instanceof NotFoundError) return 1;
      throw err;
    }
  }

  async #proven(
    tenant: string,
    stream: string,
    options: { limit?: number; memory?: MemoryAccount },
  ): Promise<{ items: JsonValue[]; seq: number; schema?: number; proof?: HistoryProof }> {
    const { states, checkpoints } = this.deps;
    let head: ChainHead;
    try {
      head = await this.#head(tenant, stream);
    } catch (err) {
      if (err instanceof StreamNotFoundError) return { items: [], seq: 0 };
      throw err;
    }
    if (!head.exists || head.stateSeq === 0) return { items: [], seq: head.seq };
    const at = head.stateSeq;
    if (digestVersionOf(head) !== 2) return this.#wholeV1(tenant, stream, head, options);
    let value: Awaited<ReturnType<typeof readStateValue>>;
    try {
      value = await readStateValue(
        states,
        { tenant, stream, at, path: '/items', proof: true, memory: options.memory },
        { cache: checkpoints.cache },
      );
    } catch (err) {
      if (err instanceof NotFoundError) return { items: [], seq: head.seq };
      throw err;
    }
    // readSpan: the segment of the state-setting event is kept even at a pruning point.
    const [event] = await states.reader.readSpan(tenant, stream, at, at);
    const all = Array.isArray(value.value) ? value.value : [];
    const { limit } = options;
    const items = limit === undefined ? all : limit <= 0 ? [] : all.slice(-limit);
    const schema = await this.#schemaAt(tenant, stream, at, options.memory);
    const versioned = { items, seq: head.seq, ...(schema > 1 ? { schema } : {}) };
    if (!event || !value.proof) return versioned;
    return { ...versioned, proof: { event, state: value.proof } };
  }

  /** A v1 stream's proven read: its digest covers the whole state, so the whole state goes. */
  async #wholeV1(
    tenant: string,
    stream: string,
    head: ChainHead,
    options: { limit?: number; memory?: MemoryAccount },
  ): Promise<{ items: JsonValue[]; seq: number; schema?: number; proof?: HistoryProof }> {
    const { states } = this.deps;
    const at = head.stateSeq;
    const { state: whole } = await states.hydrate(tenant, stream, at, { memory: options.memory });
    const [event] = await states.reader.readSpan(tenant, stream, at, at);
    const all = Array.isArray(whole.items) ? whole.items : [];
    const { limit } = options;
    const items = limit === undefined ? all : limit <= 0 ? [] : all.slice(-limit);
    const schema = await this.#schemaAt(tenant, stream, at, options.memory);
    const versioned = { items, seq: head.seq, ...(schema > 1 ? { schema } : {}) };
    return event ? { ...versioned, proof: { event, whole } } : versioned;
  }

  async change(req: HistoryChangeRequest): Promise<HistoryOutcome> {
    const outcome = await this.#change(req);
    // A clear answers once the chain is cut at it (clear-cut.ts): nothing before it is served
    // from here on. A retried clear completes the cut a crash left undone.
    if (req.change.type === 'clear') {
      const at = { tenant: req.tenant, stream: req.stream };
      // Not cut (a conflict, no index record ending at the clear): the clear must not answer
      // as done while what came before it is still served; its retry cuts again.
      if (!(await cutAtClear(this.deps, at)) && (await clearUncut(this.deps.records, at))) {
        throw new UnavailableError(`session ${req.stream}: clear committed, not cut yet`);
      }
    }
    return outcome;
  }

  async #change(req: HistoryChangeRequest): Promise<HistoryOutcome> {
    const { appender, checkpoints } = this.deps;
    const { tenant, stream, change } = req;
    const digest = changeDigest(change);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const head = await appender.readHead(tenant, stream);
      appender.checkLife(req, head);
      const state = head.exists ? await this.#state(req, head) : {};
      const history = head.exists ? historyOf(state) : EMPTY_HISTORY;
      const idempotency = req.operationId
        ? { key: historyOperationKey(history.life, operationIdHash(req.operationId)), digest }
        : undefined;
      if (idempotency && req.operationId) {
        const done = await this.#done(req, head, history, idempotency);
        if (done) return done;
      }
      // a stream that holds no history yet (never written, or written by other routes)
      const exists = head.exists && Array.isArray(state.items);
      const schema = req.schema ?? 1;
      if (exists) checkSchema(history.schema, schema);
      const plan = planChange(history, change, { exists, schema });
      if (!plan) return { seq: head.seq, applied: false };
      let result: Awaited<ReturnType<Checkpointer['checkpoint']>>;
      try {
        result = await checkpoints.checkpoint({
          tenant,
          stream,
          ops: plan.ops,
          baseDigest: head.stateDigest,
          idempotency,
          fence: req.fence,
          incarnation: req.incarnation,
          memory: req.memory,
          ...(change.type === 'clear' ? { clear: true as const } : {}),
          ...(schema > 1 ? { schema } : {}),
        });
      } catch (err) {
        // The history moved between 1 and 4: plan the change again on the new one.
        if (err instanceof DivergenceError && err.current !== undefined) continue;
        throw err;
      }
      const receipt = { treeHead: result.treeHead, incarnation: result.incarnation };
      if (result.replayed) return { ...(await this.#replayed(req, result.seq)), ...receipt };
      return { seq: result.seq, applied: true, ...popped(plan.popped), ...receipt };
    }
    throw new UnavailableError(`session ${stream} kept changing: ${MAX_ATTEMPTS} attempts`);
  }

  /** Step 2: the answer of an operation id already applied, if it was. */
  async #done(
    req: HistoryChangeRequest,
    head: ChainHead,
    history: SessionHistory,
    idempotency: { key: string; digest: string },
  ): Promise<HistoryOutcome | undefined> {
    const { appender } = this.deps;
    const at = { tenant: req.tenant, stream: req.stream, events: [] };
    const answer = async (stored: AppendOutcome): Promise<HistoryOutcome> => {
      const { lastSeq, treeHead, incarnation } = stored.response;
      return { ...(await this.#replayed(req, lastSeq)), treeHead, incarnation };
    };
    const stored = await appender.storedResult({ ...at, idempotency }, head);
    if (stored) return answer(stored);
    if (req.change.type !== 'clear' || history.life === 0 || !req.operationId) return undefined;
    // A clear's record is kept under the life it ended (the one its plan read). Under the same
    // id, that life may also hold another change, forgotten by a later clear: not this one.
    const ended = historyOperationKey(history.life - 1, operationIdHash(req.operationId));
    const cleared = await appender
      .storedResult({ ...at, idempotency: { ...idempotency, key: ended } }, head)
      .catch((err: unknown) => {
        if (err instanceof IdempotencyKeyReusedError) return undefined;
        throw err;
      });
    return cleared && answer(cleared);
  }

  /**
   * The answer of a change applied before, at `seq`. A pop's item is read from the chain: the
   * last item of the history its delta applied to (the state at seq - 1), at the index the
   * history's length after it names.
   */
  async #replayed(req: HistoryChangeRequest, seq: number): Promise<HistoryOutcome> {
    if (req.change.type !== 'pop') return { seq, applied: false };
    const read = (at: number, path: string) =>
      readStateValue(
        this.deps.states,
        { tenant: req.tenant, stream: req.stream, at, path, memory: req.memory },
        { cache: this.deps.checkpoints.cache },
      );
    const after = await read(seq, '/items');
    const length = Array.isArray(after.value) ? after.value.length : 0;
    const { value } = await read(seq - 1, `/items/${length}`);
    return { seq, applied: false, popped: value };
  }

  #head(tenant: string, stream: string) {
    return this.deps.appender.readHead(tenant, stream);
  }

  /** The state at the head (verified: the warm state of this process, else hydrated). */
  async #state(req: HistoryChangeRequest, head: ChainHead): Promise<JsonObject> {
    const { checkpoints, states } = this.deps;
    // A copy of the warm entry's list, taken now: a checkpoint may take the entry (its ops
    // apply in place) at the next await, and the plan must see the history it read.
    const warm = checkpoints.cache.peek(req.tenant, req.stream, head.stateDigest)?.state;
    if (warm) return Array.isArray(warm.items) ? { ...warm, items: [...warm.items] } : { ...warm };
    const hydrated = await states.hydrate(req.tenant, req.stream, head.seq, {
      memory: req.memory,
    });
    return hydrated.state;
  }
}

/**
 * A writer's items must have the history's shape: an older writer would put the old shape
 * into a history that has moved on (ErrSchemaTooNew); a newer one must migrate it first
 * (ErrSchemaTooOld).
 */
const checkSchema = (stored: number, writer: number): void => {
  if (stored > writer) throw new SchemaTooNewError(stored, writer);
  if (stored < writer) throw new SchemaTooOldError(stored, writer);
};

const popped = (item: JsonValue | undefined) => (item === undefined ? {} : { popped: item });
