import type { PublicErrorCode } from '../domain/errors.js';
import { PROBLEM_CONTENT_TYPE, problemType, titleOf } from './problem.js';
import { STATUS_BY_CODE } from './status-table.js';

/**
 * The error responses of a route in the OpenAPI document, from the codes it can answer: the
 * statuses come from the one status table, and each status documents exactly its codes (an
 * enum on `code`), with an example problem per code. A route lists its codes once, as lists and single codes:
 *
 *   responses: { 201: json(AppendResult, '…'), ...errorResponses(WRITE_ERRORS, 'ErrSeqConflict') }
 *
 * The fuzz test (test/http/fuzz.test.ts) checks every answer against these lists, so a code a
 * route can answer but does not list fails it.
 */

/** Every route behind an API key. */
export const AUTH_ERRORS = ['ErrUnauthorized', 'ErrForbidden'] as const satisfies PublicErrorCode[];
/** Every route that reads or writes storage (503 after retries; 500 for a bug). */
export const STORAGE_ERRORS = [
  'ErrUnavailable',
  'ErrInternal',
] as const satisfies PublicErrorCode[];
/** Every authenticated route with validated parameters, query or headers. */
export const READ_ERRORS = [
  ...AUTH_ERRORS,
  ...STORAGE_ERRORS,
  'ErrInvalidInput',
] as const satisfies PublicErrorCode[];
/** Every authenticated route with a JSON body (Content-Type, size, syntax, schema). */
export const WRITE_ERRORS = [
  ...READ_ERRORS,
  'ErrPayloadTooLarge',
  'ErrUnsupportedMediaType',
] as const satisfies PublicErrorCode[];
/** Reads that verify stored bytes: tampering or undecodable bytes fail closed. */
export const VERIFIED_READ_ERRORS = [
  'ErrTamperedLedger',
  'ErrInvalidFormat',
] as const satisfies PublicErrorCode[];
/** Every route that appends to a stream (its own events, a checkpoint, an effect's event). */
export const APPEND_ERRORS = [
  ...VERIFIED_READ_ERRORS,
  'ErrStreamNotFound',
  'ErrFenced',
  'ErrIdempotencyKeyReused',
  'ErrIdempotencyInProgress',
] as const satisfies PublicErrorCode[];

/** What a caller should make of a code, shown with it. Codes without one show their title. */
const MEANINGS: Partial<Record<PublicErrorCode, string>> = {
  ErrInvalidInput: 'a parameter, header or body failed validation (`issues` says which)',
  ErrUnauthorized: 'missing, malformed, unknown or revoked API key',
  ErrForbidden: 'the key lacks the scope, or the tenant, this needs',
  ErrStreamNotFound: 'no such stream in the key’s tenant (or it expired)',
  ErrNotFound: 'no such resource',
  ErrSeqConflict: '`expectedSeq` is not the head seq (`currentSeq` is)',
  ErrFenced: 'the fencing token is not the epoch of the stream’s live lease',
  ErrLeaseHeld: 'another owner holds the lease',
  ErrDraining: 'the stream is draining for a hand-over: no new turns',
  ErrEffectNotHeld: 'the caller is not the effect’s holder',
  ErrEffectMismatch: 'the effect key was begun as another effect (another kind or intent)',
  ErrDivergenceDetected: 'the state digest is not the one expected (`seq` says where)',
  ErrIdempotencyInProgress:
    'a request with this Idempotency-Key is in flight; retry after Retry-After',
  ErrStreamExists: 'the stream to create exists already',
  ErrStreamRecreated:
    'the stream was deleted (and maybe created again) since the `Hefesto-Incarnation` sent: nothing written',
  ErrPruned: 'retention deleted what was asked for: read after `prunedSeq`',
  ErrPayloadTooLarge: 'body, batch or payload over its limit',
  ErrUnsupportedMediaType: 'Content-Type is not application/json',
  ErrIdempotencyKeyReused: 'this Idempotency-Key was used for another request',
  ErrInvalidDelta: 'the delta cannot apply to the state (`opIndex` says which op)',
  ErrTamperedLedger: 'stored data fails verification (`firstBadSeq`): nothing from there is served',
  ErrInvalidFormat: 'stored bytes do not decode: nothing is served from them',
  ErrInternal: 'an unexpected server error',
  ErrUnavailable: 'the storage backend kept failing; retry after Retry-After',
  ErrSchemaTooOld:
    'the history’s items are at an older schema version than the writer’s: migrate them first',
  ErrDataDirInUse: 'another process holds the embedded data directory (`pid` names it)',
};

/** The extra members a problem of this code carries, as in problem.ts. */
const EXAMPLE_EXTRAS: Partial<Record<PublicErrorCode, Record<string, unknown>>> = {
  ErrInvalidInput: { issues: [{ in: 'path', path: 'streamId', message: 'Invalid string' }] },
  ErrSeqConflict: { currentSeq: 12 },
  ErrDivergenceDetected: { seq: 12 },
  ErrInvalidDelta: { opIndex: 0 },
  ErrPruned: { prunedSeq: 100 },
  ErrTamperedLedger: { firstBadSeq: 7 },
  ErrIdempotencyInProgress: { retryAfterSeconds: 2 },
  ErrSchemaTooOld: { streamVersion: 1, workerVersion: 2 },
};

const RETRY_AFTER = {
  description: 'Seconds to wait before retrying',
  schema: { type: 'integer' as const, minimum: 1 },
};

const meaningOf = (code: PublicErrorCode): string => MEANINGS[code] ?? titleOf(code);

/** An example problem of `code` (registered once, as components.examples[code]). */
export const problemExample = (code: PublicErrorCode) => ({
  summary: `${code}: ${meaningOf(code)}`,
  value: {
    type: problemType(code),
    title: titleOf(code),
    status: STATUS_BY_CODE[code],
    detail: meaningOf(code),
    code,
    instance: '/v1/streams/run-2024-06-01.a/events',
    requestId: '8f14e45f-ceea-467f-a0e6-4ad4b7ee9a3c',
    ...EXAMPLE_EXTRAS[code],
  },
});

const headersOf = (codes: PublicErrorCode[]) => {
  const headers: Record<string, { description: string; schema: object }> = {};
  if (codes.includes('ErrUnauthorized')) {
    headers['WWW-Authenticate'] = {
      description: 'Bearer realm="hefesto"',
      schema: { type: 'string' },
    };
  }
  if (codes.includes('ErrIdempotencyInProgress') || codes.includes('ErrUnavailable')) {
    headers['Retry-After'] = RETRY_AFTER;
  }
  return Object.keys(headers).length > 0 ? { headers } : {};
};

type Codes = PublicErrorCode | readonly PublicErrorCode[];

/**
 * The OpenAPI responses for the error codes a route can answer (codes and lists of codes),
 * grouped by status.
 */
export const errorResponses = (...codes: Codes[]) => {
  const byStatus = new Map<number, PublicErrorCode[]>();
  for (const code of new Set(codes.flat())) {
    const status = STATUS_BY_CODE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const sorted = [...byStatus.entries()].sort(([a], [b]) => a - b);
  return Object.fromEntries(
    sorted.map(([status, list]) => [
      status,
      {
        description: list.map((code) => `${code}: ${meaningOf(code)}`).join('. '),
        ...headersOf(list),
        content: {
          [PROBLEM_CONTENT_TYPE]: {
            // The Problem component (schemas.ts, registered by docs.ts), narrowed to these.
            schema: {
              allOf: [
                { $ref: '#/components/schemas/Problem' },
                {
                  type: 'object' as const,
                  properties: {
                    status: { type: 'integer' as const, enum: [status] },
                    code: { type: 'string' as const, enum: list },
                  },
                },
              ],
            },
            examples: Object.fromEntries(
              list.map((code) => [code, { $ref: `#/components/examples/${code}` }]),
            ),
          },
        },
      },
    ]),
  );
};

/** Every code the status table maps to one of `statuses`. */
export const codesOfStatus = (...statuses: number[]): PublicErrorCode[] =>
  (Object.keys(STATUS_BY_CODE) as PublicErrorCode[]).filter((code) =>
    statuses.includes(STATUS_BY_CODE[code]),
  );
