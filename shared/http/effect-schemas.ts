import { z } from '@hono/zod-openapi';
import { StreamParams } from './schemas.js';

/** Schemas of the lease and effect routes (validation and OpenAPI in one). */

export const OWNER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;
export const EFFECT_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$/;

export const FencingHeaders = z.object({
  'Hefesto-Fencing-Token': z
    .string()
    .regex(/^\d{1,15}$/)
    .transform(Number)
    .optional()
    .openapi({
      param: { name: 'Hefesto-Fencing-Token', in: 'header' },
      description:
        'The lease epoch of the writer; any other epoch is 409 ErrFenced. Without it, writes ' +
        'are refused (409 ErrFenced) while another worker holds the lease exclusively.',
    }),
});

export const LeaseBody = z
  .strictObject({
    owner: z.string().regex(OWNER_PATTERN),
    ttlMs: z.number().int().min(1000).max(300_000),
    exclusive: z
      .boolean()
      .optional()
      .openapi({
        description:
          'Default true: while the lease is held, writes without its epoch as ' +
          'Hefesto-Fencing-Token are refused (409 ErrFenced). false: only writers that send a ' +
          'token are fenced, as before leases were exclusive.',
      }),
  })
  .openapi('LeaseRequest');

export const LeaseOwnerBody = z
  .strictObject({ owner: z.string().regex(OWNER_PATTERN), epoch: z.number().int().min(1) })
  .openapi('LeaseOwner');

export const RenewBody = LeaseOwnerBody.extend({
  ttlMs: z.number().int().min(1000).max(300_000),
}).openapi('LeaseRenewal');

export const DrainBody = LeaseOwnerBody.extend({
  graceMs: z.number().int().min(0).max(15_000).optional().openapi({
    description:
      'Longest wait for in-flight writes (default 10 s); ends early once the stream is quiet',
  }),
}).openapi('DrainRequest');

export const LeaseResult = z
  .object({
    owner: z.string(),
    epoch: z.number().int(),
    expiresAt: z.iso.datetime(),
    draining: z.boolean(),
    exclusive: z.boolean().openapi({ description: 'Writes without the epoch are refused' }),
  })
  .openapi('Lease');

export const DrainResult = z
  .object({
    epoch: z.number().int(),
    seq: z.number().int(),
    stateDigest: z.string(),
    snapshot: z.boolean(),
  })
  .openapi('DrainResult');

/** Stream ids are validated by the one schema (StreamParams), as on every route. */
export const EffectParams = StreamParams.extend({
  effectKey: z
    .string()
    .regex(EFFECT_KEY_PATTERN)
    .openapi({ param: { name: 'effectKey', in: 'path' }, example: 'pay-order-17' }),
});

const Json = z.unknown().refine((v) => v !== undefined, 'required');

export const BeginBody = z
  .strictObject({
    kind: z.string().min(1).max(128),
    intent: Json,
    compensation: Json.optional(),
    sagaId: z.string().regex(EFFECT_KEY_PATTERN).optional(),
    leaseMs: z.number().int().min(1000).max(900_000).optional(),
  })
  .openapi('EffectBegin');

export const BeginResult = z
  .object({
    status: z.enum(['acquired', 'unknown_outcome', 'in_progress', 'completed', 'failed']),
    effectKey: z.string(),
    holder: z.string().optional(),
    leaseExpiresAt: z.number().int().optional(),
    attempt: z.number().int().optional(),
    retryAfterMs: z.number().int().optional(),
    result: z.unknown().optional(),
    error: z.unknown().optional(),
  })
  .openapi('EffectBeginResult');

export const CompleteBody = z
  .strictObject({ holder: z.string().min(1), result: Json })
  .openapi('EffectComplete');
export const FailBody = z
  .strictObject({ holder: z.string().min(1), error: Json })
  .openapi('EffectFail');

export const EffectResult = z
  .object({
    effectKey: z.string(),
    status: z.enum(['pending', 'completed', 'failed']),
    result: z.unknown().optional(),
    error: z.unknown().optional(),
  })
  .openapi('Effect');

export const SagaParams = StreamParams.extend({
  sagaId: z
    .string()
    .regex(EFFECT_KEY_PATTERN)
    .openapi({ param: { name: 'sagaId', in: 'path' } }),
});

export const CompensateResult = z
  .object({
    sagaId: z.string(),
    compensations: z.array(
      z.object({
        effectKey: z.string(),
        compensationKey: z.string(),
        compensation: z.unknown(),
        begin: BeginResult,
      }),
    ),
  })
  .openapi('SagaCompensation');
