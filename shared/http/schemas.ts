import { z } from '@hono/zod-openapi';
import { READ_LIMIT } from '../domain/limits.js';
import { RESERVED_TYPE_PREFIX } from '../domain/state.js';
import { SCOPES, TENANT_PATTERN } from '../keys/keys.js';
import { parseIdempotencyKey } from './idempotency-key.js';
import { codesOfStatus, errorResponses } from './openapi-errors.js';
import { SignedTreeHeadSchema } from './proof-schemas.js';
import { queryInt, queryIntDefault } from './query-int.js';

/**
 * The zod schemas of the API: they validate requests and, through @hono/zod-openapi, are the
 * OpenAPI document. One definition for both, so the document cannot drift from the code.
 */

export const STREAM_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const EVENT_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

const Seq = z.number().int().min(0);
const Hash = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .openapi({ description: 'SHA-256, lowercase hex' });

export const StreamParams = z.object({
  streamId: z
    .string()
    .regex(STREAM_ID_PATTERN)
    .openapi({ param: { name: 'streamId', in: 'path' }, example: 'run-2024-06-01.a' }),
});

export const KeyParams = z.object({
  id: z
    .string()
    .regex(/^[0-9a-f]{16}$/, 'must be a key id (16 lowercase hex digits)')
    .openapi({ param: { name: 'id', in: 'path' }, example: '3f9a1c0b7d2e4a61' }),
});

export const IdempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .transform((value, ctx) => {
      const key = parseIdempotencyKey(value);
      if (key === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: 'must be 1..255 printable ASCII characters, as an sf-string or a bare token',
        });
        return z.NEVER;
      }
      return key;
    })
    .optional()
    .openapi({
      param: { name: 'Idempotency-Key', in: 'header' },
      description:
        'Makes the append safe to retry (IETF Idempotency-Key draft). A retry with the same ' +
        'key and body gets the original answer with `Idempotent-Replayed: true`; the same key ' +
        'with another body is 422 ErrIdempotencyKeyReused.',
      example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
    }),
});

/**
 * The Idempotency-Key header with another example: each write route's example key is its own,
 * since one key sent with another body is 422 (and Swagger UI's "Try it out" sends examples).
 */
export const idempotencyExample = (example: string) => ({
  'Idempotency-Key': IdempotencyHeaders.shape['Idempotency-Key'].openapi({ example }),
});

/** Headers of a write: Idempotency-Key and the writer's fencing token. */
export const WriteHeaders = IdempotencyHeaders.extend({
  'Hefesto-Fencing-Token': z
    .string()
    .regex(/^[1-9]\d{0,14}$/, 'must be a lease epoch (a whole number from 1)')
    .transform(Number)
    .optional()
    .openapi({
      param: { name: 'Hefesto-Fencing-Token', in: 'header' },
      description:
        'The lease epoch of the writer; any other epoch is 409 ErrFenced. Without it, writes ' +
        'are refused (409 ErrFenced) while another worker holds the lease exclusively.',
    }),
});

/**
 * Headers of an append or a checkpoint: those of a write, and the incarnation (one life of
 * the stream, from an earlier answer) the request applies to.
 */
export const AppendHeaders = WriteHeaders.extend({
  'Hefesto-Incarnation': z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be an incarnation id from an earlier answer')
    .optional()
    .openapi({
      param: { name: 'Hefesto-Incarnation', in: 'header' },
      description:
        'The stream’s incarnation (`incarnation` of an earlier answer or of GET ' +
        '/v1/streams/{streamId}) the write applies to. If the stream was deleted since (and maybe ' +
        'created again), the write is 409 ErrStreamRecreated and nothing is written, so a retry ' +
        'can never land in a new life of the stream. Idempotency-Keys are kept per stream and ' +
        'incarnation.',
    }),
});

export const Incarnation = z.string().openapi({
  description:
    'The stream’s incarnation this was committed in: one life of the stream, given when it is ' +
    'created. Send it back as Hefesto-Incarnation on later writes and retries, so a write that ' +
    'straddles a delete and a re-create is 409 ErrStreamRecreated instead of landing in the ' +
    'new life.',
  example: '0f8c2a4e-5b7d-4e1a-9c3f-2d6b8a1e7f40',
});

const EventInput = z
  .strictObject({
    type: z
      .string()
      .regex(EVENT_TYPE_PATTERN)
      .refine((t) => !t.startsWith(RESERVED_TYPE_PREFIX), {
        message: `types starting with ${RESERVED_TYPE_PREFIX} are written by the service itself`,
      })
      .openapi({ example: 'observation' }),
    payload: z
      .unknown()
      .refine((value) => value !== undefined, 'payload is required')
      .openapi({ description: 'Any JSON value; size limit measured as canonical JSON' }),
  })
  .openapi('EventInput');

export const AppendBody = z
  .strictObject({
    events: z.array(EventInput).min(1),
    expectedSeq: Seq.optional().openapi({
      description: 'Append only if the stream is at this seq (0 = new stream), else 409',
    }),
    ttlSeconds: z
      .number()
      .int()
      .min(1)
      .max(100 * 365 * 86_400)
      .optional()
      .openapi({
        description:
          'Retention of the stream, when this append creates it (later: PUT .../retention). ' +
          'Default: the deployment default (HEFESTO_RETENTION_DAYS), or forever.',
      }),
  })
  .openapi('AppendRequest', {
    example: {
      events: [
        { type: 'observation', payload: { role: 'tool', name: 'search', output: '3 results' } },
      ],
      expectedSeq: 0,
    },
  });

export const AppendResult = z
  .object({
    firstSeq: Seq,
    lastSeq: Seq,
    head: z.object({ seq: Seq, hash: Hash }),
    incarnation: Incarnation.optional(),
    treeHead: SignedTreeHeadSchema.optional().openapi({
      description:
        'The receipt: the signed tree head just after this batch (a retry answers the original ' +
        'one). Absent for a stream whose tree the compactor has not built yet.',
    }),
  })
  .openapi('AppendResult', {
    example: {
      firstSeq: 1,
      lastSeq: 1,
      head: { seq: 1, hash: '6645e35b297d5293307ceb9b2488b8e5f9215fc37197cfc58500dc4d5da7b129' },
      incarnation: '0f8c2a4e-5b7d-4e1a-9c3f-2d6b8a1e7f40',
    },
  });

export const StreamHead = z
  .object({
    streamId: z.string(),
    seq: Seq,
    hash: Hash,
    stateDigest: Hash.openapi({ description: 'Digest of the state after `seq`' }),
    deltas: Seq.openapi({ description: 'Delta checkpoints written so far' }),
    stateSeq: Seq.openapi({ description: 'Seq of the last checkpoint (or fork); 0 before any' }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    digestVersion: z.union([z.literal(1), z.literal(2)]).openapi({
      description:
        'How the stream’s state digests are computed: 1, SHA-256 of the RFC 8785 JSON of the ' +
        'state (streams written before state v2); 2, the Merkle digest of docs/state-v2.md',
    }),
    incarnation: Incarnation.optional().openapi({
      description:
        'This life of the stream (absent on a stream created before incarnations, until its ' +
        'next write). Send it as Hefesto-Incarnation on writes.',
    }),
  })
  .openapi('StreamHead', {
    example: {
      streamId: 'run-2024-06-01.a',
      seq: 1,
      hash: '6645e35b297d5293307ceb9b2488b8e5f9215fc37197cfc58500dc4d5da7b129',
      stateDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
      deltas: 0,
      stateSeq: 0,
      createdAt: '2024-06-01T09:30:00.000Z',
      updatedAt: '2024-06-01T09:30:00.000Z',
      digestVersion: 2,
    },
  });

export const ReadQuery = z.object({
  from: queryInt({ min: 1, description: 'First seq to read' }).optional(),
  limit: queryIntDefault({ min: 1, max: READ_LIMIT.max, default: READ_LIMIT.default }),
  type: z.string().regex(EVENT_TYPE_PATTERN).optional().openapi({
    description: 'Only events of this type',
  }),
});

export const LedgerEventSchema = z
  .object({
    seq: Seq,
    ts: z.number().int().openapi({ description: 'Milliseconds since the epoch, hashed' }),
    type: z.string(),
    payload: z.unknown(),
    prevHash: Hash,
    hash: Hash,
  })
  .openapi('LedgerEvent');

export const EventsPage = z
  .object({
    events: z.array(LedgerEventSchema),
    next: Seq.nullable().openapi({
      description: 'Pass as `from` to read on; null once the read reached the head',
    }),
  })
  .openapi('EventsPage', {
    example: {
      events: [
        {
          seq: 1,
          ts: 1717234200000,
          type: 'observation',
          payload: { name: 'search', output: '3 results', role: 'tool' },
          prevHash: '7270359585a74b85821f9a34ef24f7b5a64854e80d8a3a654a1f8e4f4c87c128',
          hash: '6645e35b297d5293307ceb9b2488b8e5f9215fc37197cfc58500dc4d5da7b129',
        },
      ],
      next: null,
    },
  });

export const VerifyResult = z
  .union([
    z.object({ ok: z.literal(true), seq: Seq, hash: Hash }),
    z.object({
      ok: z.literal(false),
      code: z.literal('ErrTamperedLedger'),
      firstBadSeq: Seq,
      object: z
        .enum([
          'segment',
          'head',
          'snapshot',
          'fork-origin',
          'value',
          'checkpoint',
          'pending-writes',
          'effect',
          'tree',
        ])
        .openapi({
          description:
            'What failed: a segment, the head, a base snapshot, a fork’s origin, a chunk of a value set by ref, a checkpoint’s list entry or label, a label’s pending writes, a finished effect’s record, the stored Merkle tree (tiles; named by proofs, not by /verify, which recomputes the chain itself)',
        }),
      seq: Seq.openapi({
        description:
          'The seq it stands for: a segment’s first bad seq, the head’s, a snapshot’s, 0 for a fork origin',
      }),
    }),
  ])
  .openapi('VerifyResult', {
    example: {
      ok: true,
      seq: 1,
      hash: '6645e35b297d5293307ceb9b2488b8e5f9215fc37197cfc58500dc4d5da7b129',
    },
  });

export const RepairResult = z
  .object({
    repaired: z.boolean().openapi({ description: 'false: the head already matched the chain' }),
    before: z.object({ seq: Seq, hash: Hash }).nullable().openapi({
      description: 'The head found before; null when it was missing',
    }),
    head: z.object({ seq: Seq, hash: Hash, stateDigest: Hash, deltas: Seq, stateSeq: Seq }),
    prunedSeq: Seq.optional(),
  })
  .openapi('RepairResult', {
    example: {
      repaired: true,
      before: null,
      head: {
        seq: 3,
        hash: '6645e35b297d5293307ceb9b2488b8e5f9215fc37197cfc58500dc4d5da7b129',
        stateDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
        deltas: 0,
        stateSeq: 0,
      },
    },
  });

export const ScopeSchema = z.enum(SCOPES);

export const CreateKeyBody = z
  .strictObject({
    tenant: z.string().regex(TENANT_PATTERN).optional().openapi({
      description: "The key's tenant; defaults to the caller's",
      example: 'acme',
    }),
    scopes: z.array(ScopeSchema).min(1),
  })
  .openapi('CreateKeyRequest', { example: { tenant: 'acme', scopes: ['read', 'write'] } });

export const CreatedKey = z
  .object({
    id: z.string(),
    key: z.string().openapi({ description: 'The secret key; shown only in this response' }),
    tenant: z.string(),
    scopes: z.array(ScopeSchema),
  })
  .openapi('CreatedKey', {
    example: {
      id: '71070ee88ba1d44d',
      key: 'hk_71070ee88ba1d44d_Ej8cWzY7LvJDLZNWSa4FjJ2hTKdFpB5aN9JiIi0IMRE',
      tenant: 'acme',
      scopes: ['read', 'write'],
    },
  });

export const Health = z
  .object({ ok: z.literal(true) })
  .openapi('Health', { example: { ok: true } });

export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: 'urn:hefesto:problem:ErrSeqConflict' }),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().openapi({ example: 'ErrSeqConflict' }),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    currentSeq: Seq.optional().openapi({ description: 'ErrSeqConflict: the head seq now' }),
    firstBadSeq: Seq.optional().openapi({ description: 'ErrTamperedLedger: first bad seq' }),
    prunedSeq: Seq.optional().openapi({ description: 'ErrPruned: events up to here are gone' }),
    seq: Seq.optional().openapi({
      description:
        'ErrDivergenceDetected: the stream head seq (stale baseDigest) or the seq at fault',
    }),
    stateDigest: z.string().optional().openapi({
      description: "ErrDivergenceDetected (stale baseDigest): the stream's state digest now",
    }),
    opIndex: z.number().int().min(0).optional().openapi({
      description: 'ErrInvalidDelta: the op that cannot apply',
    }),
    retryAfterSeconds: z.number().int().min(1).optional().openapi({
      description: 'ErrIdempotencyInProgress: as the Retry-After header',
    }),
    issues: z
      .array(z.object({ in: z.string(), path: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'ErrInvalidInput: what failed validation' }),
  })
  .openapi('Problem', { description: 'RFC 9457 problem details' });

/**
 * OpenAPI responses for the problem statuses a route can answer, documenting every code of
 * each status.
 * @deprecated List the codes the route answers instead: errorResponses (openapi-errors.ts).
 */
export const problemResponses = (...statuses: number[]) =>
  errorResponses(codesOfStatus(...statuses));

export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

export const BEARER_SECURITY = [{ bearerAuth: [] }];
