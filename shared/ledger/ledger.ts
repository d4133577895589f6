import { Reader } from '../chain/reader.js';
import type { StreamKeyring } from '../chain/stream-keyring.js';
import { Appender, type AppendOptions } from '../commit/append.js';
import { CheckpointLabels } from '../commit/labels.js';
import { HeadRepair } from '../commit/repair.js';
import { StreamDeleter } from '../commit/stream-delete.js';
import { StreamList } from '../commit/stream-list.js';
import { Retention } from '../compaction/retention.js';
import { EffectList } from '../effects/effect-list.js';
import { EffectService } from '../effects/effects.js';
import { HistoryService } from '../history/history.js';
import { LeaseService } from '../leases/leases.js';
import { type Clock, type IdSource, randomIds } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import type { KeyRing } from '../ports/signer.js';
import { ProofService } from '../proofs/proofs.js';
import { Checkpointer, StateCache } from '../state/checkpoint.js';
import { DeltaHistory } from '../state/delta-history.js';
import { Drainer } from '../state/drain.js';
import { FrozenWrites } from '../state/frozen-writes.js';
import { PendingWrites } from '../state/pending-writes.js';
import { StateStore, type StateStoreOptions } from '../state/state.js';
import { TupleReader } from '../state/tuple-read.js';
import { Verifier } from '../verify/verifier.js';

export interface LedgerDeps {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
  /** Ids of effect holders. Default: random UUIDs. */
  ids?: IdSource;
  /**
   * The stream keys (docs/privacy.md): new streams are encrypted at rest. Without it, new
   * streams are written in the clear, and encrypted ones verify but cannot be read.
   */
  keyring?: StreamKeyring;
}

export type LedgerSettings = Omit<AppendOptions, keyof LedgerDeps | 'signer'> & {
  /** The deployment's signing keys: receipts, tree heads and `GET /v1/signing-keys`. */
  signing?: KeyRing;
  /** A base snapshot every K deltas. Default 25. */
  snapshotEvery?: number;
  /** Told when a base snapshot could not be written (the checkpoint still succeeds). */
  onSnapshotError?: (err: unknown) => void;
  /** The warm states' cache (its bounds are part of the memory ceiling). */
  stateCache?: StateCache;
} & Pick<
    StateStoreOptions,
    | 'snapshotEncoding'
    | 'snapshotCrash'
    | 'chunks'
    | 'maxValueBytes'
    | 'budget'
    | 'chunkCacheBytes'
    | 'memory'
    | 'pacer'
  >;

/**
 * The ledger services over one pair of stores: appends, reads, verification (of the chain,
 * the head, snapshots and fork origins), state, retention settings, and the operator repair
 * of a stream's head.
 */
export class Ledger {
  readonly appender: Appender;
  readonly reader: Reader;
  readonly verifier: Verifier;
  readonly repair: HeadRepair;
  readonly states: StateStore;
  readonly checkpoints: Checkpointer;
  readonly retention: Retention;
  readonly leases: LeaseService;
  readonly drainer: Drainer;
  readonly effects: EffectService;
  readonly labels: CheckpointLabels;
  readonly pendingWrites: PendingWrites;
  readonly streamList: StreamList;
  readonly streamDeleter: StreamDeleter;
  /** A stream's effects, for the console (effect-list.ts). */
  readonly effectList: EffectList;
  readonly proofs: ProofService;
  /** Session histories (an OpenAI Agents SDK Session's, history.ts). */
  readonly history: HistoryService;
  /** A checkpoint with its state (conditional) and writes in one read (tuple-read.ts). */
  readonly tuples: TupleReader;
  /** Channel histories along a checkpoint's parent chain in one read (delta-history.ts). */
  readonly channelHistory: DeltaHistory;

  constructor(deps: LedgerDeps, settings: LedgerSettings = {}) {
    const {
      snapshotEvery,
      onSnapshotError,
      snapshotEncoding,
      snapshotCrash,
      chunks,
      maxValueBytes,
      budget,
      chunkCacheBytes,
      memory,
      pacer,
      stateCache,
      signing,
      ...append
    } = settings;
    const signer = signing?.current;
    this.appender = new Appender({ ...deps, ...append, snapshotEvery, signer });
    this.reader = new Reader(deps);
    this.verifier = new Verifier({ ...deps, reader: this.reader });
    this.repair = new HeadRepair({ ...deps, reader: this.reader });
    this.states = new StateStore({
      ...deps,
      reader: this.reader,
      snapshotEvery,
      snapshotEncoding,
      snapshotCrash,
      chunks,
      maxValueBytes,
      budget,
      chunkCacheBytes,
      memory,
      pacer,
    });
    this.labels = new CheckpointLabels(deps.records, this.reader);
    const frozenWrites = new FrozenWrites({
      ...deps,
      reader: this.reader,
      appender: this.appender,
    });
    this.pendingWrites = new PendingWrites({
      ...deps,
      reader: this.reader,
      chunks: this.states.chunks,
      maxValueBytes,
      late: frozenWrites,
    });
    this.streamList = new StreamList(deps);
    this.streamDeleter = new StreamDeleter(deps);
    this.checkpoints = new Checkpointer({
      appender: this.appender,
      states: this.states,
      reader: this.reader,
      labels: this.labels,
      writes: frozenWrites,
      onSnapshotError,
      ...(stateCache
        ? { cache: stateCache }
        : memory
          ? { cache: new StateCache(undefined, undefined, memory) }
          : {}),
    });
    this.tuples = new TupleReader({
      reader: this.reader,
      states: this.states,
      labels: this.labels,
      pendingWrites: this.pendingWrites,
    });
    this.channelHistory = new DeltaHistory({
      reader: this.reader,
      records: deps.records,
      states: this.states,
      cache: this.checkpoints.cache,
    });
    this.history = new HistoryService({
      appender: this.appender,
      checkpoints: this.checkpoints,
      states: this.states,
      records: deps.records,
    });
    this.retention = new Retention(deps);
    this.proofs = new ProofService({ ...deps, reader: this.reader, signing });
    this.leases = new LeaseService(deps);
    this.drainer = new Drainer({
      ...deps,
      leases: this.leases,
      reader: this.reader,
      states: this.states,
    });
    this.effects = new EffectService({
      ...deps,
      ids: deps.ids ?? randomIds,
      appender: this.appender,
      reader: this.reader,
    });
    this.effectList = new EffectList({ ...deps, reader: this.reader });
  }
}
