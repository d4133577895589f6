import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import { Appender, type AppendOptions } from './append.js';
import { Checkpointer } from './checkpoint.js';
import { Reader } from './reader.js';
import { StateStore } from './state.js';

export interface LedgerDeps {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
}

export type LedgerSettings = Omit<AppendOptions, keyof LedgerDeps> & {
  /** A base snapshot every K deltas. Default 25. */
  snapshotEvery?: number;
  /** Told when a base snapshot could not be written (the checkpoint still succeeds). */
  onSnapshotError?: (err: unknown) => void;
};

/** The ledger services over one pair of stores: appends, reads, verification, state. */
export class Ledger {
  readonly appender: Appender;
  readonly reader: Reader;
  readonly states: StateStore;
  readonly checkpoints: Checkpointer;

  constructor(deps: LedgerDeps, settings: LedgerSettings = {}) {
    const { snapshotEvery, onSnapshotError, ...append } = settings;
    this.appender = new Appender({ ...deps, ...append });
    this.reader = new Reader(deps);
    this.states = new StateStore({ ...deps, reader: this.reader, snapshotEvery });
    this.checkpoints = new Checkpointer({
      appender: this.appender,
      states: this.states,
      onSnapshotError,
    });
  }
}
