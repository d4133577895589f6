/**
 * Errors of the Hefesto client. A server error keeps the server's stable `code` (the API);
 * the message is for people.
 */

/**
 * The stable error codes the server answers with (RFC 9457 `code` member).
 *
 * @example
 * ```ts
 * const code: ServerErrorCode = 'ErrSeqConflict';
 * ```
 */
export type ServerErrorCode =
  | 'ErrInvalidInput'
  | 'ErrUnauthorized'
  | 'ErrForbidden'
  | 'ErrStreamNotFound'
  | 'ErrNotFound'
  | 'ErrSeqConflict'
  | 'ErrDivergenceDetected'
  | 'ErrIdempotencyInProgress'
  | 'ErrIdempotencyKeyReused'
  | 'ErrStreamExists'
  | 'ErrStreamRecreated'
  | 'ErrFenced'
  | 'ErrLeaseHeld'
  | 'ErrDraining'
  | 'ErrEffectNotHeld'
  | 'ErrEffectMismatch'
  | 'ErrPruned'
  | 'ErrInvalidDelta'
  | 'ErrPayloadTooLarge'
  | 'ErrUnsupportedMediaType'
  | 'ErrTamperedLedger'
  | 'ErrUnavailable'
  | 'ErrInternal'
  | 'ErrLabelExists'
  | 'ErrDataDirInUse'
  | (string & {});

/**
 * An RFC 9457 problem body as the server sends it.
 *
 * @example
 * ```ts
 * const problem: Problem | undefined = err instanceof HefestoApiError ? err.problem : undefined;
 * ```
 */
export interface Problem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  code: ServerErrorCode;
  [extra: string]: unknown;
}

/**
 * An error answered by the server (or the network), with the server's `code`.
 *
 * @example
 * ```ts
 * try {
 *   await client.append('run-1', [{ type: 'note', payload: 1 }], { expectedSeq: 0 });
 * } catch (err) {
 *   if (err instanceof HefestoApiError && err.code === 'ErrSeqConflict') {
 *     // someone else appended first: re-read and decide
 *   }
 * }
 * ```
 */
export class HefestoApiError extends Error {
  readonly code: ServerErrorCode;
  readonly status: number;
  readonly problem: Problem | undefined;

  constructor(
    code: ServerErrorCode,
    status: number,
    message: string,
    problem?: Problem,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HefestoApiError';
    this.code = code;
    this.status = status;
    this.problem = problem;
  }
}

/**
 * The client's own verification refused what the server returned: an event whose hash does
 * not recompute, or that does not link to the last point the client trusted.
 *
 * @example
 * ```ts
 * const client = new HefestoClient({ baseUrl, apiKey, tenant: 'acme', verify: true });
 * await client.readEvents('run-1').catch((err) => {
 *   if (err instanceof ClientVerificationError) console.error('bad seq', err.firstBadSeq);
 * });
 * ```
 */
export class ClientVerificationError extends HefestoApiError {
  readonly firstBadSeq: number;

  constructor(firstBadSeq: number, message: string) {
    super(
      'ErrTamperedLedger',
      0,
      `client-side verification failed at seq ${firstBadSeq}: ${message}`,
    );
    this.name = 'ClientVerificationError';
    this.firstBadSeq = firstBadSeq;
  }
}

/**
 * A replayed turn produced another state than the one recorded for it.
 *
 * @example
 * ```ts
 * try {
 *   await run.checkpoint(ops);
 * } catch (err) {
 *   if (err instanceof DivergenceDetectedError) console.error('agent diverged at turn', err.turn);
 * }
 * ```
 */
export class DivergenceDetectedError extends HefestoApiError {
  readonly turn: number;

  constructor(turn: number, expected: string, actual: string) {
    super(
      'ErrDivergenceDetected',
      0,
      `turn ${turn} produced state ${actual}, the ledger recorded ${expected}`,
    );
    this.name = 'DivergenceDetectedError';
    this.turn = turn;
  }
}

/**
 * A value the client refused to upload before sending anything: its canonical JSON is over
 * the limit of one value set by ref (`maxValueBytes`, 64 MiB unless configured).
 *
 * @example
 * ```ts
 * await client.putValue(huge).catch((err) => {
 *   if (err instanceof ValueTooLargeError) console.error(err.size, 'bytes; at most', err.limit);
 * });
 * ```
 */
export class ValueTooLargeError extends HefestoApiError {
  readonly size: number;
  readonly limit: number;

  constructor(size: number, limit: number) {
    super(
      'ErrPayloadTooLarge',
      0,
      `the value is ${size} bytes of canonical JSON; a value set by ref may be at most ${limit} bytes (maxValueBytes)`,
    );
    this.name = 'ValueTooLargeError';
    this.size = size;
    this.limit = limit;
  }
}

/**
 * Options a client (or the LangGraph saver) cannot work with, found at construction, before
 * any request: a missing or malformed `baseUrl`, a missing `apiKey`, a bad number.
 *
 * @example
 * ```ts
 * try {
 *   new HefestoClient({ baseUrl: 'http://localhost:8787', apiKey: process.env.HEFESTO_KEY });
 * } catch (err) {
 *   if (err instanceof InvalidOptionsError) console.error(err.message); // names the option
 * }
 * ```
 */
export class InvalidOptionsError extends HefestoApiError {
  constructor(message: string) {
    super('ErrInvalidInput', 0, message);
    this.name = 'InvalidOptionsError';
  }
}
