import { type HefestoErrorOptions, TamperedLedgerError } from '../domain/errors.js';

/**
 * Which stored object failed verification. Reads depend on all of them: the segments (the
 * events), the chain head (where reads stop and appends chain on), the base snapshots (state
 * reads) and, for a fork, the origin snapshot its first event names.
 */
export type TamperedObject =
  | 'segment'
  | 'head'
  | 'snapshot'
  | 'fork-origin'
  /** A chunk of a value a delta sets by ref. */
  | 'value'
  /** A checkpoint's list entry or label record (labels.ts). */
  | 'checkpoint'
  /** The pending writes of a checkpoint label (pending-writes.ts). */
  | 'pending-writes'
  /** A finished effect's record (effect-binding.ts). */
  | 'effect'
  /** The stored Merkle tree a proof is computed from: tiles, the index records' treeNodes. */
  | 'tree';

/**
 * ErrTamperedLedger naming the object that failed and the seq it stands for (a segment's
 * first bad seq, the head's seq, a snapshot's seq, 0 for a fork's origin). Every other
 * TamperedLedgerError comes from segment bytes, so it counts as `segment`.
 */
export class TamperedObjectError extends TamperedLedgerError {
  readonly object: TamperedObject;
  readonly seq: number;

  constructor(
    object: TamperedObject,
    at: { firstBadSeq: number; seq: number },
    message: string,
    options?: HefestoErrorOptions,
  ) {
    super(at.firstBadSeq, message, options);
    this.object = object;
    this.seq = at.seq;
  }
}

export const objectOf = (err: TamperedLedgerError): { object: TamperedObject; seq: number } =>
  err instanceof TamperedObjectError
    ? { object: err.object, seq: err.seq }
    : { object: 'segment', seq: err.firstBadSeq };
