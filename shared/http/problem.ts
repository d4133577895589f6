import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import {
  DivergenceError,
  HefestoError,
  IdempotencyInProgressError,
  InvalidDeltaError,
  InvalidInputError,
  isPublicErrorCode,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  PrunedError,
  type PublicErrorCode,
  SchemaTooNewError,
  SchemaTooOldError,
  SeqConflictError,
  TamperedLedgerError,
  UnavailableError,
  UnsupportedMediaTypeError,
} from '../domain/errors.js';
import type { AppEnv } from './context.js';
import { statusOf } from './status-table.js';
import { isRequestIssues } from './validation.js';

/**
 * The error handler: every failure leaves the API as an RFC 9457 problem document,
 * `application/problem+json`, with a stable `code`. Statuses come from status-table.ts.
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: PublicErrorCode;
  instance?: string;
  requestId?: string;
  [extra: string]: unknown;
}

/** Problem types are URNs named by the code: stable identifiers, not documents to fetch. */
export const problemType = (code: PublicErrorCode): string => `urn:hefesto:problem:${code}`;

/** 'ErrIdempotencyKeyReused' -> 'Idempotency key reused'. */
export const titleOf = (code: PublicErrorCode): string => {
  const words = code.replace(/^Err/, '').replace(/([a-z])([A-Z])/g, '$1 $2');
  return words.charAt(0) + words.slice(1).toLowerCase();
};

type PublicError = HefestoError & { readonly code: PublicErrorCode };

const internal = (cause: unknown): PublicError =>
  new HefestoError('ErrInternal', 'internal error', { cause }) as PublicError;

/**
 * An error with an internal code (ErrConflict escaping the services, ErrCrashInjected from a
 * test's hook) is a bug or a crash to the caller: ErrInternal, with the error kept as the
 * cause for the log; the internal code is never answered.
 */
const toHefestoError = (err: unknown): PublicError => {
  if (err instanceof HefestoError) {
    return isPublicErrorCode(err.code) ? (err as PublicError) : internal(err);
  }
  const known = fromHttpException(err);
  return known ? (known as PublicError) : internal(err);
};

/**
 * Errors that reach here without a code: hono's own HTTPExceptions for the few statuses it
 * raises on request input (should our middleware miss one); anything else is a bug.
 */
const fromHttpException = (err: unknown): HefestoError | undefined => {
  if (err instanceof HTTPException) {
    if (err.status === 400) return new InvalidInputError(err.message || 'bad request');
    if (err.status === 413) return new PayloadTooLargeError('the request body is too large');
    if (err.status === 415) return new UnsupportedMediaTypeError('unsupported media type');
  }
  return undefined;
};

/** What a caller may see: 4xx messages are written for callers; 5xx internals are not. */
const detailOf = (err: HefestoError, status: number): string => {
  if (err instanceof TamperedLedgerError) {
    return `the ledger fails verification at seq ${err.firstBadSeq}; nothing from there on is served`;
  }
  if (status < 500) return err.message;
  if (err instanceof UnavailableError && err.detail) return err.detail;
  if (err.code === 'ErrUnavailable') return 'the storage backend is unavailable; retry later';
  return 'an internal error occurred';
};

const extrasOf = (err: HefestoError): Record<string, unknown> => {
  if (err instanceof SeqConflictError) return { currentSeq: err.currentSeq };
  if (err instanceof TamperedLedgerError) return { firstBadSeq: err.firstBadSeq };
  if (err instanceof DivergenceError && err.current !== undefined) {
    // A stale baseDigest: the head to build the retry on, without another GET.
    return { seq: err.current.seq, stateDigest: err.current.stateDigest };
  }
  if (err instanceof DivergenceError && err.seq !== undefined) return { seq: err.seq };
  if (err instanceof InvalidDeltaError) {
    return { opIndex: err.opIndex, ...(err.chunk === undefined ? {} : { chunk: err.chunk }) };
  }
  if (err instanceof PayloadTooLargeError && err.overrun) return { ...err.overrun };
  if (err instanceof PrunedError) return { prunedSeq: err.prunedSeq };
  if (err instanceof SchemaTooNewError || err instanceof SchemaTooOldError) {
    return { streamVersion: err.streamVersion, workerVersion: err.workerVersion };
  }
  if (err instanceof IdempotencyInProgressError) {
    return { retryAfterSeconds: retryAfterSeconds(err.retryAfterMs) };
  }
  return isRequestIssues(err.cause) ? { issues: err.cause.issues } : {};
};

const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

const headersOf = (err: HefestoError): Record<string, string> => {
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (err.code === 'ErrUnauthorized') headers['www-authenticate'] = 'Bearer realm="hefesto"';
  if (err instanceof IdempotencyInProgressError) {
    headers['retry-after'] = String(retryAfterSeconds(err.retryAfterMs));
  }
  if (err.code === 'ErrUnavailable') {
    const ms = err instanceof UnavailableError ? err.retryAfterMs : undefined;
    headers['retry-after'] = String(retryAfterSeconds(ms ?? 1000));
  }
  if (err instanceof MethodNotAllowedError) headers.allow = err.allow.join(', ');
  return headers;
};

const respond = (error: unknown, c: Context<AppEnv>): Response => {
  const err = toHefestoError(error);
  const status = statusOf(err.code);
  if (err.code === 'ErrInternal' || status >= 500) c.set('internalError', err.cause ?? err);
  c.set('errorCode', err.code);
  const body: Problem = {
    type: problemType(err.code),
    title: titleOf(err.code),
    status,
    detail: detailOf(err, status),
    code: err.code,
    instance: c.req.path,
    requestId: c.get('requestId'),
    ...extrasOf(err),
  };
  return c.body(JSON.stringify(body), status, headersOf(err));
};

export const problemHandler: ErrorHandler<AppEnv> = (err, c) => respond(err, c);

/**
 * No route matched: 405 ErrMethodNotAllowed with `Allow` when the path is known under other
 * methods (`allowedMethods` answers them, from the registered routes), else 404 ErrNotFound.
 */
export const notFoundHandler =
  (allowedMethods: (path: string) => readonly string[] = () => []): NotFoundHandler<AppEnv> =>
  (c) => {
    const { method, path } = c.req;
    const allow = allowedMethods(path);
    const err =
      allow.length > 0
        ? new MethodNotAllowedError(method, path, allow)
        : new NotFoundError(`no route for ${method} ${path}`);
    return respond(err, c);
  };
