import { headMismatch, LayoutRaceError } from '../chain/chain-head.js';
import { type HeadRecord, type SnapshotIndexRecord, toSnapshotIndex } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { bindBase, HeadStateCheck } from '../chain/state-binding.js';
import {
  baseDueKey,
  SNAPSHOT_INDEX_PREFIX,
  snapshotIndexKey,
  snapshotIndexSk,
  snapshotKey,
  streamPk,
} from '../chain/storage-keys.js';
import { type TamperedObject, TamperedObjectError } from '../chain/tampered.js';
import { canonicalJson } from '../domain/canonical.js';
import {
  DivergenceError,
  InvalidInputError,
  PrunedError,
  TamperedLedgerError,
} from '../domain/errors.js';
import { genesisHash, type LedgerEvent } from '../domain/event.js';
import { decodeAnySnapshot, encodeSnapshot, type StateRootRef } from '../domain/snapshot.js';
import {
  appliesOps,
  DELTA_EVENT,
  type DeltaPayload,
  FORK_EVENT,
  type ForkPayload,
  type JsonObject,
} from '../domain/state.js';
import { type DigestVersion, digestVersionOf } from '../domain/state-digest.js';
import {
  boundedSource,
  checkBudget,
  DEFAULT_WORK_BUDGET,
  MerkleState,
  measureValue,
  memoryOf,
  type VerifiedChunk,
  type WorkBudget,
} from '../domain/state-v2/index.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import { ChunkCache, ChunkStore, type StoredKnowledge } from './chunk-store.js';
import type { Pacer } from './loop-turns.js';
import type { MemoryAccount, MemoryPool } from './memory-pool.js';
import { openSnapshot, sealSnapshot } from './snapshot-seal.js';
import { ChunkSnapshots, type SnapshotCrashHook } from './snapshot-v2.js';
import { hasRefs, ValueStore } from './values.js';
import { WorkingState } from './working-state.js';

/**
 * Hydration: the state of a stream at any seq, from one base snapshot and the events after it.
 *
 *   1. Find the latest snapshot at or before seq in the snapshot index (one query).
 *   2. Read it, check it names this stream and seq, and recompute its digest.
 *   3. Read the events after it (verified against the chain by the Reader), check the first
 *      links to the snapshot's chain hash, and apply every delta: its baseDigest must be the
 *      running digest, and the digest recomputed after it must be the one it recorded.
 * Any mismatch fails closed: ErrTamperedLedger for bytes, ErrDivergenceDetected for digests.
 *
 * A v2 delta names the seq whose state it applies to (`baseSeq`, docs/records-v2.md). When
 * that is not the state the walk holds (a time-travel branch), the state at `baseSeq` is
 * hydrated first (recursively, by the same rule), and the walk goes on from the delta's
 * result: the ledger stays one line, every delta's result is the state after it.
 *
 * Digests are of the head's `digestVersion` (records-v2): v1 streams hash the canonical JSON
 * after every delta, as they always did; v2 streams build the Merkle tree of the base once
 * and re-hash only the paths each delta touches (working-state.ts).
 */

export interface HydratedState {
  seq: number;
  /** The state (the live JSON of `working`). */
  state: JsonObject;
  /** The state with what its digest version hashes it by, for a checkpoint to go on from. */
  working: WorkingState;
  stateDigest: string;
  /** Chain hash of event `seq`. */
  hash: string;
  /** Deltas applied on top of the base (the repair rule writes a base past K). */
  deltasApplied: number;
  /** Seq of the base snapshot used (0: none, started from {} or a fork's origin). */
  baseSeq: number;
  /** Delta count of the stream at `seq`, when the base used records it. */
  deltas?: number;
  /** records-v2 depth of the state at `seq`: deltas since its base along baseSeq links. */
  depth: number;
  /**
   * The last state-setting event at or before `seq` (0: none), verified; undefined when the
   * walk started from a base written before bases kept it, at the pruning point.
   */
  stateSeq?: number;
}

/** Where a snapshot object is written: the state at a seq, its digest and its version. */
export interface SnapshotAt {
  seq: number;
  hash: string;
  stateDigest: string;
  /** The state's RFC 8785 canonical JSON (may be '' when `tree` is given). */
  stateJson: string;
  /** v2: the state's tree, written as chunks without serializing it. */
  tree?: MerkleState;
  /** The stream's digest version (absent: 1). */
  digestVersion?: DigestVersion;
  /** The last state-setting event at or before `seq` (absent: unknown, a legacy floor). */
  stateSeq?: number;
}

/**
 * What a base snapshot is written from: a v2 state's tree itself (its chunks are encoded
 * from it as they are put, taking turns of the event loop: no canonical JSON of the whole
 * state, parsed again and rebuilt), a v1 state's canonical JSON.
 */
export const snapshotState = (working: WorkingState): Pick<SnapshotAt, 'stateJson' | 'tree'> =>
  working.tree ? { stateJson: '', tree: working.tree } : { stateJson: working.json() };

export interface StateStoreOptions {
  objects: ObjectStore;
  records: RecordStore;
  reader: Reader;
  /** A base snapshot every K deltas. Default 25. */
  snapshotEvery?: number;
  clock?: Clock;
  /** The tenant chunk store (shared with the compactor's GC); one is made when absent. */
  chunks?: ChunkStore;
  /** How new base snapshots and fork origins are stored. Default 'chunks' (snapshots v2). */
  snapshotEncoding?: 'chunks' | 'jcs';
  /** Largest value a checkpoint may set by ref (docs/state-v2.md). Default 64 MiB. */
  maxValueBytes?: number;
  /** What one request may materialise (docs/state-v2.md, "Limits"). */
  budget?: WorkBudget;
  /** Bytes of verified chunks kept in memory when no `chunks` is given. Default 64 MiB. */
  chunkCacheBytes?: number;
  /** Test hook: throw from it to die after a step of a snapshot v2 write. */
  snapshotCrash?: SnapshotCrashHook;
  /**
   * The process's memory pool (memory-pool.ts): the chunk cache made here and what requests
   * materialise draw on it. None: no ceiling but the work budget.
   */
  memory?: MemoryPool;
  /** Turns of the event loop in long reads and writes when no `chunks` is given (loop-turns.ts). */
  pacer?: Pacer;
}

type Options = Required<
  Omit<
    StateStoreOptions,
    | 'chunks'
    | 'snapshotCrash'
    | 'clock'
    | 'maxValueBytes'
    | 'budget'
    | 'chunkCacheBytes'
    | 'memory'
    | 'pacer'
  >
>;

/**
 * What hydration reads besides segments fails as the object it is (docs/ledger-format.md,
 * "Storage kinds and the tamper matrix"): a bad base snapshot (or one of its chunks) is
 * `snapshot`, a fork's origin `fork-origin`, a chunk of a value set by ref `value`. A layout
 * race stays one, so that the read is run again.
 */
export const tamperedAs =
  (object: TamperedObject, seq: number) =>
  (err: unknown): never => {
    if (
      err instanceof TamperedLedgerError &&
      !(err instanceof TamperedObjectError) &&
      !(err instanceof LayoutRaceError)
    ) {
      const why = err.message.replace(/^ledger tampered at seq \d+: /, '');
      const at = { firstBadSeq: Math.max(err.firstBadSeq, 1), seq };
      throw new TamperedObjectError(object, at, why, { cause: err });
    }
    throw err;
  };

export class StateStore {
  readonly #o: Options;
  /** Snapshots v2: chunks of the tenant, reference records, the chunk cache. */
  readonly snapshots: ChunkSnapshots;
  /** Large values: uploaded chunks, and the refs of deltas resolved from them. */
  readonly values: ValueStore;
  /** The heads whose state digest was checked against the chain (state-binding.ts). */
  readonly headStates: HeadStateCheck;
  /** What one request may materialise: a state and the values it sets, counted expanded. */
  readonly budget: WorkBudget;
  /** The process's memory pool, if any (memory-pool.ts). */
  readonly memory: MemoryPool | undefined;

  constructor(options: StateStoreOptions) {
    this.budget = options.budget ?? DEFAULT_WORK_BUDGET;
    this.memory = options.memory;
    this.#o = {
      ...options,
      snapshotEvery: options.snapshotEvery ?? 25,
      snapshotEncoding: options.snapshotEncoding ?? 'chunks',
    };
    const chunks =
      options.chunks ??
      new ChunkStore({
        ...options,
        clock: options.clock ?? { now: () => Date.now() },
        ...(options.chunkCacheBytes === undefined && options.memory === undefined
          ? {}
          : { cache: new ChunkCache(options.chunkCacheBytes, options.memory) }),
      });
    this.snapshots = new ChunkSnapshots(
      chunks,
      options.objects,
      options.records,
      options.snapshotCrash,
    );
    this.values = new ValueStore(chunks, options.objects, options.maxValueBytes);
    this.headStates = new HeadStateCheck(options.reader);
  }

  get chunks(): ChunkStore {
    return this.snapshots.chunks;
  }

  /** The reader hydration verifies events with (state-read.ts reads by path through it). */
  get reader(): Reader {
    return this.#o.reader;
  }

  get snapshotEvery(): number {
    return this.#o.snapshotEvery;
  }

  /**
   * Writes a snapshot object (put-if-absent; same bytes again is fine) and returns its key;
   * sealed under `contentKey` when the stream is sealed at rest (snapshot-seal.ts).
   */
  async writeSnapshotObject(
    tenant: string,
    stream: string,
    at: SnapshotAt,
    contentKey?: Uint8Array,
  ): Promise<string> {
    const key = snapshotKey(tenant, stream, at.seq, at.stateDigest);
    const body = encodeSnapshot(
      {
        tenant,
        stream,
        seq: at.seq,
        hash: at.hash,
        stateDigest: at.stateDigest,
        ...(at.digestVersion === 2 ? { digestVersion: 2 as const } : {}),
        ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
      },
      at.stateJson === '' && at.tree ? canonicalJson(at.tree.state) : at.stateJson,
    );
    await this.#o.objects.putIfAbsent(key, sealSnapshot(body, { tenant, stream, key }, contentKey));
    return key;
  }

  /**
   * Writes a base snapshot: the object, then its index record, then clears the `basedue`
   * record the commit of its delta left (if the process dies before, the compactor finds the
   * record and writes the base again: every step is idempotent).
   */
  async writeSnapshot(
    tenant: string,
    stream: string,
    at: SnapshotAt & {
      deltas?: number;
      stored?: StoredKnowledge;
      /**
       * The stream's head as the caller read it, after the stream's first commit (a head's
       * keyId is fixed from then on, so it says whether the base is sealed): saves a read.
       */
      keyHead?: { seq: number; keyId?: string };
    },
  ): Promise<string> {
    // A stream sealed at rest writes its base sealed (refused when the key cannot be opened:
    // never written in the clear).
    const { keyHead, ...snapshot } = at;
    const head = keyHead && keyHead.seq > 0 ? keyHead : await this.#o.reader.head(tenant, stream);
    const contentKey = (await this.#o.reader.sealedKeys(tenant, stream, head))?.keys.content;
    at = snapshot;
    if (this.#o.snapshotEncoding === 'chunks') {
      const { stateJson, tree, ...rest } = at;
      const state = tree ?? (JSON.parse(stateJson) as JsonObject);
      return (await this.snapshots.writeBase(tenant, stream, { ...rest, state, contentKey })).key;
    }
    const key = await this.writeSnapshotObject(tenant, stream, at, contentKey);
    await this.#o.records.put({
      ...snapshotIndexKey(tenant, stream, at.seq),
      seq: at.seq,
      hash: at.hash,
      stateDigest: at.stateDigest,
      objectKey: key,
      ...(at.deltas === undefined ? {} : { deltas: at.deltas }),
      ...(at.digestVersion === 2 ? { digestVersion: 2 } : {}),
      ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
    });
    await this.#o.records.delete(baseDueKey(tenant, stream, at.seq));
    return key;
  }

  /** Whether a base snapshot is indexed at exactly `seq`. */
  async hasSnapshot(tenant: string, stream: string, seq: number): Promise<boolean> {
    return (await this.#o.records.get(snapshotIndexKey(tenant, stream, seq))) !== undefined;
  }

  /** Hydrates `seq` (verified) and writes it as a base snapshot; answers its object key. */
  async writeBaseAt(tenant: string, stream: string, seq: number): Promise<string> {
    const at = await this.hydrate(tenant, stream, seq);
    return this.writeSnapshot(tenant, stream, {
      seq,
      hash: at.hash,
      stateDigest: at.stateDigest,
      ...snapshotState(at.working),
      deltas: at.deltas,
      digestVersion: at.working.version,
      ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
    });
  }

  async #loadSnapshot(
    tenant: string,
    stream: string,
    objectKey: string,
    expect: { seq: number; stateDigest: string; hash?: string; digestVersion: DigestVersion },
    memory: MemoryAccount | undefined,
    contentKey?: Uint8Array,
  ) {
    const stored = await this.#o.objects.get(objectKey);
    if (!stored)
      throw new TamperedLedgerError(Math.max(expect.seq, 1), `snapshot ${objectKey} is missing`);
    const where = { tenant, stream, key: objectKey, seq: expect.seq };
    const body = openSnapshot(stored.body, where, contentKey);
    const what = `the state at seq ${expect.seq}`;
    // A whole-JSON snapshot is about its state's size: checked (and its bytes charged to the
    // memory pool) before it is parsed, its JSON values once they are counted.
    checkBudget({ nodes: 0, bytes: body.length - 1024 }, this.budget, what);
    await memory?.charge(memoryOf({ nodes: 0, bytes: body.length }));
    const decoded = decodeAnySnapshot(body, { tenant, stream, ...expect });
    if ('state' in decoded) {
      const working = decoded.merkle
        ? WorkingState.ofTree(decoded.merkle)
        : WorkingState.of(decoded.state, 1, expect.stateDigest);
      checkBudget(working.extent, this.budget, what);
      await memory?.charge(memoryOf({ nodes: working.extent.nodes, bytes: 0 }));
      return { ...decoded, working };
    }
    return this.#readRoot(tenant, stream, decoded.root, expect, memory);
  }

  /** A snapshot v2 root's state, verified against the digest of the stream's version. */
  async #readRoot(
    tenant: string,
    stream: string,
    root: StateRootRef,
    expect: { seq: number; stateDigest: string; digestVersion: DigestVersion },
    memory: MemoryAccount | undefined,
  ) {
    // Measured from its chunks before it is built: a state over the budget is refused here.
    const fetched = new Map<string, Uint8Array>();
    const source = boundedSource(this.chunks.source(tenant, fetched), this.chunks.concurrency);
    // Kept for the read: no chunk is fetched and verified twice.
    const verified = new Map<string, VerifiedChunk>();
    const extent = await measureValue(root.digest, source, {
      pause: this.chunks.pacer.pause,
      verified,
      budget: this.budget,
      what: `the state at seq ${expect.seq}`,
      seq: Math.max(1, expect.seq),
      canonical: false,
    });
    this.chunks.remember(tenant, fetched);
    fetched.clear();
    // What building it will hold, charged to the request (memory-pool.ts).
    await memory?.charge(memoryOf(extent));
    const read = await this.snapshots.readRoot(tenant, stream, root, expect, verified);
    verified.clear();
    const working =
      expect.digestVersion === 2
        ? WorkingState.ofTree(read.tree, extent)
        : WorkingState.of(read.state, 1, expect.stateDigest);
    return { state: read.state, working };
  }

  /** The latest indexed base snapshot at or before `seq`, if any. */
  async baseAtOrBefore(tenant: string, stream: string, seq: number) {
    const page = await this.#o.records.query(streamPk(tenant, stream), {
      skPrefix: SNAPSHOT_INDEX_PREFIX,
      after: snapshotIndexSk(seq + 1),
      limit: 1,
    });
    const item = page.items[0];
    return item ? toSnapshotIndex(item) : undefined;
  }

  /**
   * The latest base at or before `seq` bound to the chain (state-binding.ts), with its
   * verified stateSeq (undefined: a legacy base at the pruning point) and the verified events
   * after it up to `to` (none by default); undefined: none, start from {} (or a fork).
   */
  async boundBaseAtOrBefore(
    tenant: string,
    stream: string,
    seq: number,
    head: HeadRecord,
    options: { to?: number; maxAfter?: number; headChecked?: boolean } = {},
  ): Promise<{ base: SnapshotIndexRecord; stateSeq?: number; after: LedgerEvent[] } | undefined> {
    for (let below = seq; below >= 0; ) {
      const base = await this.baseAtOrBefore(tenant, stream, below);
      if (!base) return undefined;
      const { to, maxAfter } = options;
      const upTo =
        to === undefined
          ? undefined
          : Math.min(to, base.seq + (maxAfter ?? Number.MAX_SAFE_INTEGER));
      const bound = await bindBase(this.#o.reader, tenant, stream, head, base, {
        ...(upTo === undefined ? {} : { to: upTo }),
        headChecked: options.headChecked,
      });
      if (bound === 'empty') return undefined;
      if (bound !== 'unbound') return { base, ...bound };
      below = base.seq - 1;
    }
    return undefined;
  }

  /**
   * State at `seq` (the head when omitted). What it materialises is charged to `memory`, the
   * request's share of the process's memory (memory-pool.ts), before it is built.
   */
  async hydrate(
    tenant: string,
    stream: string,
    seq?: number,
    options: { memory?: MemoryAccount } = {},
  ): Promise<HydratedState> {
    const head = await this.#o.reader.head(tenant, stream);
    return this.#hydrate(tenant, stream, seq ?? head.seq, head, options.memory);
  }

  async #hydrate(
    tenant: string,
    stream: string,
    at: number,
    head: Awaited<ReturnType<Reader['head']>>,
    memory: MemoryAccount | undefined,
  ): Promise<HydratedState> {
    if (!Number.isSafeInteger(at) || at < 1 || at > head.seq) {
      throw new InvalidInputError(`seq must be between 1 and ${head.seq}`);
    }
    if (head.prunedSeq !== undefined && at < head.prunedSeq) {
      throw new PrunedError(stream, head.prunedSeq);
    }
    // The head is checked against the chain end alongside the first query (a state read that
    // reads no events, at a base's own seq, must not trust an edited head either).
    // The base is bound by the events from its stateSeq, read together with the first page of
    // the events after it (one read of the segments they share).
    const [bound] = await Promise.all([
      this.boundBaseAtOrBefore(tenant, stream, at, head, { to: at, maxAfter: 1000 }),
      this.#o.reader.checkHead(tenant, stream, head),
    ]);
    const base = bound?.base;
    const version = digestVersionOf(head);
    let state = WorkingState.empty(version);
    let digest = state.digest;
    let hash = '';
    let from = 1;
    if (base) {
      const expect = { ...base, digestVersion: version };
      // A stream sealed at rest: its base opens only with the key (ErrUnavailable without).
      const contentKey = (await this.#o.reader.sealedKeys(tenant, stream, head))?.keys.content;
      const snapshot = await this.#loadSnapshot(
        tenant,
        stream,
        base.objectKey,
        expect,
        memory,
        contentKey,
      ).catch(tamperedAs('snapshot', base.seq));
      state = snapshot.working;
      digest = base.stateDigest;
      hash = base.hash;
      from = base.seq + 1;
    }
    let deltasApplied = 0;
    let depth = 0;
    // The seq whose state the walk holds, and the last state-setting seq at or before it.
    let stateSeq = base?.seq ?? 0;
    let lastStateSeq: number | undefined = bound ? bound.stateSeq : 0;
    const apply = async (event: LedgerEvent) => {
      if (event.seq === from && base && event.prevHash !== base.hash) {
        throw new TamperedLedgerError(
          event.seq,
          'first event after the snapshot does not link to it',
        );
      }
      if (appliesOps(event.type)) {
        const payload = event.payload as unknown as DeltaPayload;
        const held = payload.baseSeq === stateSeq || payload.baseSeq === lastStateSeq;
        if (payload.baseSeq !== undefined && !held) {
          ({ state, digest, depth } = await this.#baseOf(
            tenant,
            stream,
            payload.baseSeq,
            head,
            memory,
          ));
        }
        state = await this.#applyDelta(tenant, event, state, digest, memory);
        digest = payload.stateDigest;
        depth = typeof payload.depth === 'number' ? payload.depth : depth + 1;
        stateSeq = event.seq;
        lastStateSeq = event.seq;
        if (event.type === DELTA_EVENT) deltasApplied++;
      } else if (event.type === FORK_EVENT) {
        ({ state, digest } = await this.#applyFork(tenant, stream, event, version, memory));
        depth = 0;
        stateSeq = event.seq;
        lastStateSeq = event.seq;
      }
      hash = event.hash;
    };
    let next: number | undefined = from;
    for (const event of bound?.after ?? []) {
      if (event.seq > at) break;
      await apply(event);
      next = event.seq + 1;
    }
    while (next !== undefined && next <= at) {
      const page = await this.#o.reader.readEvents(tenant, stream, {
        from: next,
        limit: Math.min(1000, at - next + 1),
      });
      for (const event of page.events) {
        if (event.seq > at) break;
        await apply(event);
      }
      next = page.next;
      if (page.events.length === 0) break;
    }
    if (base && at === base.seq) hash = base.hash;
    // The head's state digest and stateSeq are side fields: the chain is the authority.
    if (at === head.seq && digest !== head.stateDigest) {
      throw headMismatch(head, "the head's state digest is not the one the chain records");
    }
    if (at === head.seq && lastStateSeq !== undefined && lastStateSeq !== head.stateSeq) {
      throw headMismatch(head, "the head's stateSeq is not the chain's last checkpoint");
    }
    const deltas = base ? base.deltas : 0;
    return {
      seq: at,
      state: state.state,
      working: state,
      stateDigest: digest,
      hash,
      deltasApplied,
      baseSeq: base?.seq ?? 0,
      depth,
      ...(deltas === undefined ? {} : { deltas: deltas + deltasApplied }),
      ...(lastStateSeq === undefined ? {} : { stateSeq: lastStateSeq }),
    };
  }

  /** The state a branching delta applies to: {} at 0, else hydrated (verified) at `seq`. */
  async #baseOf(
    tenant: string,
    stream: string,
    seq: number,
    head: Awaited<ReturnType<Reader['head']>>,
    memory: MemoryAccount | undefined,
  ): Promise<{ state: WorkingState; digest: string; depth: number }> {
    if (seq === 0) {
      const empty = WorkingState.empty(digestVersionOf(head));
      return { state: empty, digest: empty.digest, depth: 0 };
    }
    const at = await this.#hydrate(tenant, stream, seq, head, memory);
    return { state: at.working, digest: at.stateDigest, depth: at.depth };
  }

  /**
   * The origin of a fork, stored before its fork event: snapshots v2 put the fork's
   * reference and the chunks not already stored (none when the state is a stored base), and
   * answer the root for the payload; `confirm` runs after the fork event is appended (a
   * reference the GC reaped meanwhile, as a crashed writer's, is put back with its chunks).
   * v1 encoding: a snapshot object under the new stream.
   */
  async writeForkOrigin(
    tenant: string,
    stream: string,
    origin: { source: string; state: JsonObject | MerkleState; stateDigest: string },
  ): Promise<{
    fields: { root: StateRootRef } | { snapshotKey: string };
    confirm(): Promise<void>;
  }> {
    if (this.#o.snapshotEncoding !== 'chunks') {
      const { state } = origin;
      const snapshotKey = await this.writeSnapshotObject(tenant, stream, {
        seq: 0,
        hash: genesisHash(tenant, stream),
        stateDigest: origin.stateDigest,
        stateJson: canonicalJson(state instanceof MerkleState ? state.state : state),
        digestVersion: 2, // a fork is a v2 stream
      });
      return { fields: { snapshotKey }, confirm: async () => {} };
    }
    return this.snapshots.writeForkOrigin(tenant, stream, origin);
  }

  /** Where a forked stream came from (its first event), verified like any read. */
  async forkOrigin(tenant: string, stream: string): Promise<ForkPayload['source']> {
    const [first] = (await this.#o.reader.readEvents(tenant, stream, { from: 1, limit: 1 })).events;
    if (first?.type !== FORK_EVENT) throw new InvalidInputError(`stream ${stream} is not a fork`);
    return (first.payload as unknown as ForkPayload).source;
  }

  async #applyDelta(
    tenant: string,
    event: LedgerEvent,
    state: WorkingState,
    digest: string,
    memory: MemoryAccount | undefined,
  ): Promise<WorkingState> {
    const payload = event.payload as unknown as DeltaPayload;
    if (payload.baseDigest !== digest) {
      throw new DivergenceError(
        `delta at seq ${event.seq} does not start from the state before it`,
        event.seq,
        digest,
      );
    }
    // Values set by ref come from the tenant's chunks, verified (a missing one is tampering),
    // measured first against the budget with the state they go into.
    const what = `the state at seq ${event.seq}`;
    const refs = hasRefs(payload.ops)
      ? await this.values
          .measureRefs(tenant, payload.ops, {
            budget: this.budget,
            held: state.extent,
            seq: event.seq,
            memory,
          })
          .then((measured) => this.values.readRefs(tenant, payload.ops, measured))
          .catch(tamperedAs('value', event.seq))
      : undefined;
    const next = state.apply(payload.ops, refs);
    checkBudget(next.extent, this.budget, what);
    if (next.digest !== payload.stateDigest) {
      throw new DivergenceError(
        `state after seq ${event.seq} does not match its recorded digest`,
        event.seq,
        payload.stateDigest,
      );
    }
    return next;
  }

  async #applyFork(
    tenant: string,
    stream: string,
    event: LedgerEvent,
    version: DigestVersion,
    memory: MemoryAccount | undefined,
  ) {
    const payload = event.payload as unknown as ForkPayload;
    if (event.seq !== 1)
      throw new TamperedLedgerError(event.seq, 'a fork event can only open a stream');
    if (payload.root !== undefined) {
      const expect = { seq: 1, stateDigest: payload.stateDigest, digestVersion: version };
      const read = await this.#readRoot(tenant, stream, payload.root, expect, memory).catch(
        tamperedAs('fork-origin', 0),
      );
      return { state: read.working, digest: payload.stateDigest };
    }
    if (typeof payload.snapshotKey !== 'string')
      throw new TamperedLedgerError(1, 'the fork event names no origin');
    const expect = { seq: 0, stateDigest: payload.stateDigest, digestVersion: version };
    const snapshot = await this.#loadSnapshot(
      tenant,
      stream,
      payload.snapshotKey,
      expect,
      memory,
    ).catch(tamperedAs('fork-origin', 0));
    return { state: snapshot.working, digest: payload.stateDigest };
  }
}
