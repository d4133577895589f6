import type { FaultInjector, FaultKind, StoreOp } from '../../ports/faults.js';

/**
 * What the S3 and DynamoDB adapters share at the transport boundary: fault injection as SDK
 * middleware, and the classification of network failures.
 */

type Handler = (args: unknown) => Promise<unknown>;

/** Any SDK v3 command: each carries its own middleware stack, merged into the client's. */
export interface SdkCommand {
  middlewareStack: object;
}

/** The one overload of the SDK's `MiddlewareStack.add` used here. */
interface FinalizeStack {
  add(
    middleware: (next: Handler) => Handler,
    options: { step: 'finalizeRequest'; priority: 'low'; name: string },
  ): void;
}

/**
 * Options for `client.send`. Passing an options object (even empty) keeps a client configured
 * with `cacheMiddleware: true` from reusing a handler built for another command instance,
 * which would drop or misapply the fault middleware below.
 */
export const SEND_OPTIONS = {};

const NETWORK_ERROR_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const TIMEOUT_ERROR_NAMES = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number; attempts?: number };
}

const asErrorLike = (err: unknown): ErrorLike =>
  typeof err === 'object' && err !== null ? (err as ErrorLike) : {};

export const errorName = (err: unknown): string | undefined => {
  const { name } = asErrorLike(err);
  return typeof name === 'string' ? name : undefined;
};

export const httpStatus = (err: unknown): number | undefined =>
  asErrorLike(err).$metadata?.httpStatusCode;

/** How many attempts the SDK's own retry made before this error surfaced. */
export const sdkAttempts = (err: unknown): number => asErrorLike(err).$metadata?.attempts ?? 1;

/** No usable reply: connection reset or refused, timeout, DNS failure. */
export const isNetworkError = (err: unknown, depth = 0): boolean => {
  const e = asErrorLike(err);
  if (typeof e.name === 'string' && TIMEOUT_ERROR_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && NETWORK_ERROR_CODES.has(e.code)) return true;
  return e.cause !== undefined && depth < 5 && isNetworkError(e.cause, depth + 1);
};

/**
 * The request may have been applied although it failed: no reply arrived, or the server
 * failed after receiving it (5xx). A throttle (4xx) was refused before any work.
 */
export const outcomeUnknown = (err: unknown): boolean =>
  isNetworkError(err) || (httpStatus(err) ?? 0) >= 500;

/** What the network layer throws when a connection drops before the reply arrives. */
export const replyLostError = (): Error =>
  Object.assign(new Error('socket hang up (injected reply-lost)'), { code: 'ECONNRESET' });

/**
 * Adds the fault middleware to one command, so only this adapter's calls are affected. It
 * sits in the finalizeRequest step below the SDK's retry middleware: it runs once per
 * attempt, and the SDK classifies what it throws exactly as it would a real reply.
 */
export const withFaults = <C extends SdkCommand>(
  command: C,
  op: StoreOp | undefined,
  faults: FaultInjector | undefined,
  toError: (fault: Exclude<FaultKind, 'reply-lost'>) => Error,
): C => {
  if (faults === undefined || op === undefined) return command;
  (command.middlewareStack as FinalizeStack).add(
    (next) => async (args) => {
      const fault = faults.take(op);
      if (fault === undefined) return next(args);
      if (fault !== 'reply-lost') throw toError(fault);
      // The request reaches the store and is applied (or refused); the reply never arrives.
      await next(args).catch(() => undefined);
      throw replyLostError();
    },
    { step: 'finalizeRequest', priority: 'low', name: 'hefestoFaultInjection' },
  );
  return command;
};
