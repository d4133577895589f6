/**
 * One errors module for the whole service. Every error carries a stable `code` (the API);
 * messages are diagnostics only. The mapping from codes to HTTP statuses lives in one table
 * used by the HTTP error handler alone.
 */

/**
 * The codes the API answers with (the RFC 9457 `code` member): the one public list. The HTTP
 * status table (http/status-table.ts), the OpenAPI examples, the README's error table and the
 * client's `ServerErrorCode` are all this list.
 */
export const PUBLIC_ERROR_CODES = [
  'ErrTamperedLedger',
  'ErrDivergenceDetected',
  'ErrFenced',
  'ErrLeaseHeld',
  'ErrDraining',
  'ErrEffectNotHeld',
  'ErrEffectMismatch',
  'ErrSeqConflict',
  'ErrUnavailable',
  'ErrInvalidInput',
  'ErrInvalidFormat',
  'ErrStreamNotFound',
  'ErrPruned',
  'ErrNotFound',
  'ErrIdempotencyKeyReused',
  'ErrIdempotencyInProgress',
  'ErrInvalidDelta',
  'ErrStreamExists',
  'ErrStreamRecreated',
  'ErrPayloadTooLarge',
  'ErrUnsupportedMediaType',
  'ErrUnauthorized',
  'ErrForbidden',
  'ErrMethodNotAllowed',
  'ErrInternal',
  'ErrLabelExists',
  'ErrSchemaTooNew',
  'ErrSchemaTooOld',
  'ErrDataDirInUse',
] as const;

export type PublicErrorCode = (typeof PUBLIC_ERROR_CODES)[number];

/**
 * Codes that never leave the process: `ErrConflict` (a conditional write lost; the services
 * decide what it means, and one that escapes them is a bug, answered as ErrInternal) and
 * `ErrCrashInjected` (thrown by the tests' crash hooks between two steps of a protocol).
 */
export type InternalErrorCode = 'ErrConflict' | 'ErrCrashInjected';

/** What a HefestoError may carry: a public code, or an internal one (see above). */
export type ErrorCode = PublicErrorCode | InternalErrorCode;

export const isPublicErrorCode = (code: string): code is PublicErrorCode =>
  (PUBLIC_ERROR_CODES as readonly string[]).includes(code);

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
  /** When to retry (the Retry-After header); default 1 s. */
  readonly retryAfterMs?: number;
  /** A message written for callers (a 5xx shows none otherwise). */
  readonly detail?: string;

  constructor(
    message: string,
    options?: HefestoErrorOptions & { retryAfterMs?: number; detail?: string },
  ) {
    super('ErrUnavailable', message, options);
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
    if (options?.detail !== undefined) this.detail = options.detail;
  }
}

/**
 * Content is stored encrypted and this process holds no key to open it (a server started
 * without its key store, an auditor's reader). Integrity checks never need it; reads of
 * content do. Public code ErrUnavailable: the content is there, its key is not.
 */
export class ContentSealedError extends UnavailableError {
  /** `what`: the content refused, e.g. "payload of seq 4". */
  constructor(what: string, options?: HefestoErrorOptions) {
    super(`${what} is encrypted and no content key is available`, {
      ...options,
      detail: 'the content key of this stream is not available to this server',
    });
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

/**
 * A checkpoint whose base digest is not the stream's state digest, a stated post digest
 * that is not what the ops yield, or a stored digest that hydration cannot reproduce.
 */
export class DivergenceError extends HefestoError {
  readonly seq: number | undefined;
  readonly expectedDigest: string | undefined;
  /**
   * The stream's head when a checkpoint's baseDigest was stale: what a retry builds on, sent
   * in the problem body so that a client need not read the stream again.
   */
  readonly current: { seq: number; stateDigest: string } | undefined;

  constructor(
    message: string,
    seq?: number,
    expectedDigest?: string,
    current?: { seq: number; stateDigest: string },
  ) {
    super('ErrDivergenceDetected', message);
    this.seq = seq;
    this.expectedDigest = expectedDigest;
    this.current = current;
  }

  /** A checkpoint's baseDigest is not the state digest of the stream's head. */
  static staleBase(head: { seq: number; stateDigest: string }): DivergenceError {
    const { seq, stateDigest } = head;
    return new DivergenceError(
      `baseDigest is not the stream state digest (the stream is at seq ${seq}, stateDigest ${stateDigest})`,
      seq,
      stateDigest,
      { seq, stateDigest },
    );
  }
}

/** Delta operations that cannot apply to the state (missing path, set under a non-object). */
export class InvalidDeltaError extends HefestoError {
  readonly opIndex: number;
  /** A chunk the op's `ref` names that is not stored under the tenant (upload it first). */
  readonly chunk: string | undefined;

  constructor(opIndex: number, message: string, options?: { chunk?: string }) {
    super('ErrInvalidDelta', `op ${opIndex}: ${message}`);
    this.opIndex = opIndex;
    this.chunk = options?.chunk;
  }
}

export class StreamExistsError extends HefestoError {
  constructor(stream: string, message = `stream ${stream} already exists`) {
    super('ErrStreamExists', message);
  }
}

/** The caller's expectedSeq is not the stream's head seq. */
export class SeqConflictError extends HefestoError {
  readonly currentSeq: number;

  constructor(expectedSeq: number, currentSeq: number) {
    super('ErrSeqConflict', `expected seq ${expectedSeq}, stream is at ${currentSeq}`);
    this.currentSeq = currentSeq;
  }
}

/**
 * The request named the incarnation (one life) of a stream it was first sent to
 * (Hefesto-Incarnation), and that life is over: the stream was deleted, and maybe created
 * again since. Nothing was written; writing into the new life would apply a retry there.
 */
export class StreamRecreatedError extends HefestoError {
  constructor(stream: string, current: string | undefined) {
    super(
      'ErrStreamRecreated',
      current === undefined
        ? `stream ${stream} was deleted since this request's incarnation; nothing was written`
        : `stream ${stream} was deleted and created again (incarnation ${current}) since this ` +
            `request's incarnation; nothing was written`,
    );
  }
}

export class StreamNotFoundError extends HefestoError {
  constructor(stream: string) {
    super('ErrStreamNotFound', `stream ${stream} not found`);
  }
}

/**
 * The events (or state) asked for lie before the stream's pruning point: they were deleted by
 * retention. Everything after `prunedSeq` is still verifiable from the recorded hash there.
 */
export class PrunedError extends HefestoError {
  readonly prunedSeq: number;

  constructor(stream: string, prunedSeq: number) {
    super('ErrPruned', `stream ${stream} is pruned up to seq ${prunedSeq}; read after it`);
    this.prunedSeq = prunedSeq;
  }
}

export class NotFoundError extends HefestoError {
  constructor(message: string) {
    super('ErrNotFound', message);
  }
}

/** The Idempotency-Key was used before for a request with another fingerprint. */
export class IdempotencyKeyReusedError extends HefestoError {
  constructor() {
    super('ErrIdempotencyKeyReused', 'this Idempotency-Key was used for a different request');
  }
}

/** A request with this Idempotency-Key is still being processed. */
export class IdempotencyInProgressError extends HefestoError {
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number) {
    super('ErrIdempotencyInProgress', 'a request with this Idempotency-Key is in progress');
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A work budget a request would exceed (docs/state-v2.md, "Limits"): `nodes` (JSON values)
 * or `bytes` (canonical JSON) that one request may materialise, with the limit and what the
 * request would need (at least).
 */
export interface BudgetOverrun {
  budget: 'stateNodes' | 'stateBytes';
  limit: number;
  needed: number;
}

export class PayloadTooLargeError extends HefestoError {
  readonly overrun: BudgetOverrun | undefined;

  constructor(message: string, overrun?: BudgetOverrun) {
    super('ErrPayloadTooLarge', message);
    this.overrun = overrun;
  }
}

export class UnsupportedMediaTypeError extends HefestoError {
  constructor(message: string) {
    super('ErrUnsupportedMediaType', message);
  }
}

export class UnauthorizedError extends HefestoError {
  constructor(message = 'missing or invalid API key') {
    super('ErrUnauthorized', message);
  }
}

export class ForbiddenError extends HefestoError {
  constructor(message: string) {
    super('ErrForbidden', message);
  }
}

/** A known path asked with a method it does not serve; `allow` lists the ones it does. */
export class MethodNotAllowedError extends HefestoError {
  readonly allow: readonly string[];

  constructor(method: string, path: string, allow: readonly string[]) {
    super('ErrMethodNotAllowed', `${path} does not serve ${method}; it serves ${allow.join(', ')}`);
    this.allow = allow;
  }
}

/** The embedded data directory does not exist (a command that needs one never creates it). */
export class DataDirNotFoundError extends NotFoundError {
  readonly dir: string;

  constructor(dir: string) {
    super(`no data directory at ${dir}`);
    this.dir = dir;
  }
}

/**
 * Another holder (a running server, or an in-process engine: `@hefesto/embedded`) has the
 * embedded data directory's lock: one process owns a data directory. `pid` names the holder
 * when it left its pid in the directory (dir-lock.ts); this process's own pid when a second
 * store of this process asked.
 */
export class DataDirInUseError extends HefestoError {
  readonly dir: string;
  readonly pid: number | undefined;

  constructor(dir: string, options?: HefestoErrorOptions & { pid?: number; message?: string }) {
    const pid = options?.pid;
    super(
      'ErrDataDirInUse',
      options?.message ??
        `the data directory ${dir} is in use by a running server${pid ? ` (pid ${pid})` : ''}`,
      options,
    );
    this.dir = dir;
    this.pid = pid;
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

/**
 * A write refused by the stream's lease: its fencing token is not the current epoch (stale,
 * released, from the future, or naming no lease), or it has none while another worker holds
 * the lease exclusively. The message says which (leases.ts words it).
 */
export class FencedError extends HefestoError {
  readonly currentEpoch: number | undefined;

  constructor(message: string, currentEpoch?: number) {
    super('ErrFenced', message);
    this.currentEpoch = currentEpoch;
  }
}

/** Another owner holds the stream's lease until `expiresAt`. */
export class LeaseHeldError extends HefestoError {
  readonly expiresAt: number;

  constructor(expiresAt: number) {
    super(
      'ErrLeaseHeld',
      `another worker holds this stream until ${new Date(expiresAt).toISOString()}`,
    );
    this.expiresAt = expiresAt;
  }
}

/** The stream is draining for a hand-over: no new turns (checkpoints) until the next lease. */
export class DrainingError extends HefestoError {
  constructor() {
    super('ErrDraining', 'the stream is draining for a hand-over; no new turns are accepted');
  }
}

/** complete/fail of an effect by a caller that does not hold it. */
export class EffectNotHeldError extends HefestoError {
  constructor(effectKey: string) {
    super('ErrEffectNotHeld', `effect ${effectKey} is not held by this caller`);
  }
}

/** An effect key reused for another effect (another kind or another intent). */
export class EffectMismatchError extends HefestoError {
  constructor(effectKey: string) {
    super('ErrEffectMismatch', `effect ${effectKey} was begun as another effect (kind or intent)`);
  }
}

/** A checkpoint label (a LangGraph checkpoint id) that the stream already holds. */
export class LabelExistsError extends HefestoError {
  readonly label: string;

  constructor(label: string) {
    super('ErrLabelExists', `this stream already has a checkpoint labelled ${label}`);
    this.label = label;
  }
}

/**
 * The stream's state is at a newer schema version than the writer's (docs/schema-evolution.md):
 * writing it would put the old shape into a run that has moved on. Names both versions.
 */
export class SchemaTooNewError extends HefestoError {
  readonly streamVersion: number;
  readonly workerVersion: number;

  constructor(streamVersion: number, workerVersion: number) {
    super(
      'ErrSchemaTooNew',
      `the stream's state is at schema version ${streamVersion}; this writer's is ${workerVersion}`,
    );
    this.streamVersion = streamVersion;
    this.workerVersion = workerVersion;
  }
}

/**
 * A session history's items are at an older schema version than the writer's
 * (docs/schema-evolution.md, "Sessions"): the writer migrates them first (a hefesto.migration)
 * and sends its change again. Names both versions.
 */
export class SchemaTooOldError extends HefestoError {
  readonly streamVersion: number;
  readonly workerVersion: number;

  constructor(streamVersion: number, workerVersion: number) {
    super(
      'ErrSchemaTooOld',
      `the history's items are at schema version ${streamVersion}; a writer of version ` +
        `${workerVersion} migrates them first (a hefesto.migration)`,
    );
    this.streamVersion = streamVersion;
    this.workerVersion = workerVersion;
  }
}
