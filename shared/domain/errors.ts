/**
 * One errors module for the whole service. Every error carries a stable `code` (the API);
 * messages are diagnostics only. The mapping from codes to HTTP statuses lives in one table
 * used by the HTTP error handler alone.
 */

export type ErrorCode =
  | 'ErrTamperedLedger'
  | 'ErrDivergenceDetected'
  | 'ErrFenced'
  | 'ErrSeqConflict'
  | 'ErrConflict'
  | 'ErrUnavailable'
  | 'ErrInvalidInput'
  | 'ErrInvalidFormat'
  | 'ErrStreamNotFound'
  | 'ErrNotFound'
  | 'ErrIdempotencyKeyReused'
  | 'ErrIdempotencyInProgress'
  | 'ErrCrashInjected'
  | 'ErrInternal';

export interface HefestoErrorOptions {
  cause?: unknown;
}

/** Base error: a stable `code`, `name` set to the class name, `cause` kept. */
export class HefestoError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: HefestoErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = new.target.name;
  }

  toJSON(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

/**
 * A hash or linkage mismatch. `firstBadSeq` is the first event that cannot be trusted;
 * nothing at or after it may be returned to a caller.
 */
export class TamperedLedgerError extends HefestoError {
  readonly firstBadSeq: number;

  constructor(firstBadSeq: number, message: string, options?: HefestoErrorOptions) {
    super('ErrTamperedLedger', `ledger tampered at seq ${firstBadSeq}: ${message}`, options);
    this.firstBadSeq = firstBadSeq;
  }
}

/**
 * A conditional write lost: the stored item/object is not what the condition expected.
 * `current` is what is stored now (undefined when nothing is stored); in a transaction,
 * `index` names the operation whose condition failed.
 */
export class ConflictError<T = unknown> extends HefestoError {
  readonly current: T | undefined;
  readonly index: number | undefined;

  constructor(message: string, current?: T, index?: number, options?: HefestoErrorOptions) {
    super('ErrConflict', message, options);
    this.current = current;
    this.index = index;
  }
}

/** The backing store kept failing with retryable errors (throttling, 503, 409 races). */
export class UnavailableError extends HefestoError {
  constructor(message: string, options?: HefestoErrorOptions) {
    super('ErrUnavailable', message, options);
  }
}

/** Bad input from a caller: never retried, nothing written. */
export class InvalidInputError extends HefestoError {
  constructor(message: string, options?: HefestoErrorOptions) {
    super('ErrInvalidInput', message, options);
  }
}

/** Stored bytes that do not decode as the documented format (fail closed). */
export class InvalidFormatError extends HefestoError {
  constructor(message: string, options?: HefestoErrorOptions) {
    super('ErrInvalidFormat', message, options);
  }
}

/** Thrown by crash-injection hooks in tests to stop a protocol between two steps. */
export class CrashInjectedError extends HefestoError {
  constructor(step: string) {
    super('ErrCrashInjected', `crash injected after step ${step}`);
  }
}

export const isHefestoError = (err: unknown): err is HefestoError => err instanceof HefestoError;

export const isConflict = (err: unknown): err is ConflictError => err instanceof ConflictError;
