import type { PublicErrorCode } from '../domain/errors.js';

/**
 * The one table from error codes to HTTP statuses. Only the error handler (problem.ts)
 * reads it; everything else throws domain errors and never picks a status itself.
 *
 * `satisfies Record<PublicErrorCode, number>` makes a new code in the errors module fail the type
 * check until it has a row here.
 *
 * Choices worth a note:
 * - ErrTamperedLedger -> 500: the request was fine, but the server cannot serve data it can
 *   prove to be intact. Not 409 (nothing the caller can change resolves it) and not 502 (no
 *   upstream protocol failed). The problem body carries `firstBadSeq`; clients detect it by
 *   `code`, not by status. `GET .../verify` answers 200 with `{ ok: false, ... }` instead,
 *   since reporting tampering is that route's job.
 * - ErrInvalidFormat -> 500: stored bytes that do not decode are the same failure seen
 *   earlier in the pipeline.
 * - ErrIdempotencyInProgress -> 409 with Retry-After, as the Idempotency-Key draft suggests.
 * - ErrInvalidDelta -> 422: a well-formed delta that cannot apply to the stored state.
 * - ErrUnavailable -> 503: the backing store kept throttling; the caller may retry.
 * - ErrStreamRecreated -> 409: the request's precondition (Hefesto-Incarnation) names a life
 *   of the stream that a delete ended; like a failed If-Match, not 412 (no HTTP conditional).
 * - ErrPruned -> 410: the events existed but retention deleted them on purpose (the body
 *   carries `prunedSeq`; everything after it is still served and verifiable).
 * - ErrDataDirInUse -> 409: no route answers it (a server whose data directory another process
 *   holds never starts); the engine's open (`@hefesto/embedded`) and the CLI's offline
 *   commands throw it. Its row is here because every code has one.
 */
export const STATUS_BY_CODE = {
  ErrInvalidInput: 400,
  ErrUnauthorized: 401,
  ErrForbidden: 403,
  ErrMethodNotAllowed: 405,
  ErrStreamNotFound: 404,
  ErrNotFound: 404,
  ErrSeqConflict: 409,
  ErrFenced: 409,
  ErrLeaseHeld: 409,
  ErrDraining: 409,
  ErrEffectNotHeld: 409,
  ErrEffectMismatch: 422,
  ErrDivergenceDetected: 409,
  ErrIdempotencyInProgress: 409,
  ErrStreamExists: 409,
  ErrStreamRecreated: 409,
  ErrPruned: 410,
  ErrPayloadTooLarge: 413,
  ErrUnsupportedMediaType: 415,
  ErrIdempotencyKeyReused: 422,
  ErrInvalidDelta: 422,
  ErrTamperedLedger: 500,
  ErrInvalidFormat: 500,
  ErrInternal: 500,
  ErrUnavailable: 503,
  ErrLabelExists: 409,
  ErrSchemaTooNew: 409,
  ErrSchemaTooOld: 409,
  ErrDataDirInUse: 409,
} as const satisfies Record<PublicErrorCode, number>;

export type ProblemStatus = (typeof STATUS_BY_CODE)[PublicErrorCode];

export const statusOf = (code: PublicErrorCode): ProblemStatus => STATUS_BY_CODE[code];
