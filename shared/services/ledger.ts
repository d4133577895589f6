import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import { Appender, type AppendOptions } from './append.js';
import { Reader } from './reader.js';

export interface LedgerDeps {
  objects: ObjectStore;
  records: RecordStore;
  clock: Clock;
}

export type LedgerSettings = Omit<AppendOptions, keyof LedgerDeps>;

/** The ledger services over one pair of stores: appends, reads and verification. */
export class Ledger {
  readonly appender: Appender;
  readonly reader: Reader;

  constructor(deps: LedgerDeps, settings: LedgerSettings = {}) {
    this.appender = new Appender({ ...deps, ...settings });
    this.reader = new Reader(deps);
  }
}
