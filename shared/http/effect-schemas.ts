import { z } from '@hono/zod-openapi';
import { StreamParams } from './schemas.js';

/** Schemas of the lease and effect routes (validation and OpenAPI in one). */

export const OWNER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$/;
export const EFFECT_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$/;

export const FencingHeaders = z.object({
  'Hefesto-Fencing-Token': z
    .string()
    // Epochs start at 1: a token of 0 would read as no fence at all to the commit protocol.
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
  .openapi('LeaseRequest', { example: { owner: 'worker-7', ttlMs: 30_000 } });

const leaseOwner = { owner: z.string().regex(OWNER_PATTERN), epoch: z.number().int().min(1) };

export const LeaseOwnerBody = z
  .strictObject(leaseOwner)
  .openapi('LeaseOwner', { example: { owner: 'worker-7', epoch: 1 } });

// Not LeaseOwnerBody.extend(): the document would say allOf of two closed objects, which
// no body can satisfy.
export const RenewBody = z
  .strictObject({ ...leaseOwner, ttlMs: z.number().int().min(1000).max(300_000) })
  .openapi('LeaseRenewal', { example: { owner: 'worker-7', epoch: 1, ttlMs: 30_000 } });

export const DrainBody = z
  .strictObject({
    ...leaseOwner,
    graceMs: z.number().int().min(0).max(15_000).optional().openapi({
      description:
        'Longest wait for in-flight writes (default 10 s); ends early once the stream is quiet',
    }),
  })
  .openapi('DrainRequest', { example: { owner: 'worker-7', epoch: 1, graceMs: 2_000 } });

export const LeaseResult = z
  .object({
    active: z.boolean().optional().openapi({
      description: 'GET only: false once released (the epoch is fenced)',
    }),
    owner: z.string(),
    epoch: z.number().int(),
    expiresAt: z.iso.datetime(),
    draining: z.boolean(),
    exclusive: z.boolean().openapi({ description: 'Writes without the epoch are refused' }),
  })
  .openapi('Lease', {
    example: {
      owner: 'worker-7',
      epoch: 1,
      expiresAt: '2024-06-01T09:30:30.000Z',
      draining: false,
      exclusive: true,
    },
  });

export const DrainResult = z
  .object({
    epoch: z.number().int(),
    seq: z.number().int(),
    stateDigest: z.string(),
    snapshot: z.boolean(),
  })
  .openapi('DrainResult', {
    example: {
      epoch: 1,
      seq: 2,
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
      snapshot: true,
    },
  });

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
  .openapi('EffectBegin', {
    example: {
      kind: 'payment',
      intent: { amount: 1200, currency: 'EUR' },
      compensation: { refund: 'pay-order-17' },
      sagaId: 'order-17',
    },
  });

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
  .openapi('EffectBeginResult', {
    example: {
      status: 'acquired',
      effectKey: 'pay-order-17',
      holder: 'a3408528-863b-4fa9-837d-6ba2d490c730',
      leaseExpiresAt: 1717234230000,
      attempt: 1,
    },
  });

export const CompleteBody = z
  .strictObject({ holder: z.string().min(1), result: Json })
  .openapi('EffectComplete', {
    example: { holder: 'a3408528-863b-4fa9-837d-6ba2d490c730', result: { paymentId: 'p_81' } },
  });
export const FailBody = z
  .strictObject({ holder: z.string().min(1), error: Json })
  .openapi('EffectFail', {
    example: { holder: 'a3408528-863b-4fa9-837d-6ba2d490c730', error: { reason: 'card declined' } },
  });

export const EffectResult = z
  .object({
    effectKey: z.string(),
    status: z.enum(['pending', 'completed', 'failed']),
    result: z.unknown().optional(),
    error: z.unknown().optional(),
  })
  .openapi('Effect', {
    example: { effectKey: 'pay-order-17', status: 'completed', result: { paymentId: 'p_81' } },
  });

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
  .openapi('SagaCompensation', {
    example: {
      sagaId: 'order-17',
      compensations: [
        {
          effectKey: 'pay-order-17',
          compensationKey: 'compensate:pay-order-17',
          compensation: { refund: 'pay-order-17' },
          begin: {
            status: 'acquired',
            effectKey: 'compensate:pay-order-17',
            holder: '0b6c1d0e-2f7a-4c55-9d4e-3a1f5e2b7c90',
            leaseExpiresAt: 1717234230000,
            attempt: 1,
          },
        },
      ],
    },
  });
