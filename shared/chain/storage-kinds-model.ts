import type { ItemKey } from '../ports/record-store.js';
import type { TamperedObject } from './tampered.js';

/**
 * Every storage kind, what it is and what detects its tampering (docs/ledger-format.md,
 * "Storage kinds and the tamper matrix"). Three classes:
 *
 * - `chain-bound`: content the chain binds; every read checks it against the chain before it
 *   serves it (the binding rule), `/verify` checks it too. A tampering is ErrTamperedLedger
 *   naming the object, or, where the server cannot see it by design (a consistent rollback),
 *   the client's trust store and the witness notice it.
 * - `control`: mutable records that steer work (leases, markers, visits, garbage lists,
 *   idempotency records...). Not chain-bound: tampering with one delays, repeats or refuses
 *   work, and never changes what a read serves.
 * - `authority`: whoever writes them holds the power they grant (API keys: whoever can write
 *   the table can mint keys). The threat model says so; nothing detects it.
 *
 * test/support/tamper-matrix-suite.ts enumerates these kinds: it tampers with each on every
 * adapter and asserts what is written here, and fails on a stored key no kind claims.
 */

export type StorageClass = 'chain-bound' | 'control' | 'authority';

/** The tamperings the matrix applies to a chain-bound kind. */
export type Mutation = 'edit' | 'swap-stream' | 'swap-seq' | 'delete' | 'rollback';
export const MUTATIONS: readonly Mutation[] = [
  'edit',
  'swap-stream',
  'swap-seq',
  'delete',
  'rollback',
];

/**
 * Who notices a tampering. Every read either answers as before or fails closed; absent
 * fields: that detector does not (and need not) fire.
 */
export interface Detection {
  /**
   * A server read that uses it fails closed: ErrTamperedLedger naming this object, or this
   * error (ErrInvalidFormat: stored bytes that do not decode, 500; ErrNotFound: a limit).
   */
  read?: TamperedObject | 'ErrInvalidFormat' | 'ErrNotFound';
  /** `/verify` answers ok:false naming this object. */
  verify?: TamperedObject;
  /** A checkpoint on top of it is refused (ErrTamperedLedger) and writes nothing. */
  refusesCheckpoint?: true;
  /**
   * By design the server serves it as a history of its own (a consistent rollback): the
   * client's trust store and the witness are the detectors.
   */
  invisible?: true;
  /** A verifying client refuses the server's history (TamperedHistoryError, this reason). */
  trustStore?: 'truncated' | 'rewritten';
  /** `hefesto audit --witness` fails. */
  witness?: true;
  /** Nothing any read serves changes, and why (every read answers as before, /verify passes). */
  harmless?: string;
}

/** Per tampering: who detects it, or (a string) why it cannot happen to this kind. */
export type Tamper = Record<Mutation, Detection | string>;

interface KindBase {
  name: string;
  class: StorageClass;
  /** Its key, as the docs show it. */
  key: string;
  what: string;
  /** Chain-bound kinds: who detects each tampering. */
  tamper?: Tamper;
  /** Control and authority kinds: what an edit or a deletion does. */
  outcome?: string;
  /** A documented limit: a tampering that changes what a read serves and nothing notices. */
  limit?: string;
}

export interface RecordKind extends KindBase {
  store: 'records';
  matches(key: ItemKey): boolean;
}

export interface ObjectKind extends KindBase {
  /** `witness`: the write-once witness store (witness.ts), not the data bucket. */
  store: 'objects' | 'witness';
  matches(key: string): boolean;
}

export type StorageKind = RecordKind | ObjectKind;

/** A tenant or stream id in a key: neither holds '#' or '/'. */
export const ID = '[^#/]+';

/** Reads and /verify name it; a checkpoint on top of it is refused. */
export const bound = (object: TamperedObject, verify: TamperedObject = object): Detection => ({
  read: object,
  verify,
  refusesCheckpoint: true,
});
/** Reads and /verify name it; checkpoints do not read it. */
export const listed = (object: TamperedObject): Detection => ({ read: object, verify: object });
export const WRITTEN_ONCE = 'written once, never changed: no older version';
export const ONE_PER_STREAM = 'one per stream: no other seq';
