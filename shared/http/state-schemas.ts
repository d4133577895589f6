import { z } from '@hono/zod-openapi';
import { SignedTreeHeadSchema } from './proof-schemas.js';
import { STREAM_ID_PATTERN } from './schemas.js';

/** Schemas of the checkpoint, state and fork routes (validation and OpenAPI in one). */

const Seq = z.number().int().min(0);
const Digest = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .openapi({ description: 'SHA-256 of the RFC 8785 canonical JSON of the state, hex' });
const Pointer = z
  .string()
  .regex(/^(\/([^~/]|~[01])*)+$/, 'must be an RFC 6901 JSON Pointer below the root, like /a/b')
  .max(1024)
  .openapi({ example: '/messages/-' });

export const DeltaOpSchema = z
  .discriminatedUnion('op', [
    z.strictObject({
      op: z.literal('set'),
      path: Pointer,
      value: z
        .unknown()
        .refine((v) => v !== undefined, 'value is required')
        .openapi({ description: 'Any JSON value' }),
    }),
    z.strictObject({ op: z.literal('delete'), path: Pointer }),
  ])
  .openapi('DeltaOp');

export const MAX_OPS = 1000;

export const CheckpointBody = z
  .strictObject({
    ops: z.array(DeltaOpSchema).min(1).max(MAX_OPS),
    baseDigest: Digest.openapi({
      description: 'The state digest this delta starts from; not the current one -> 409',
    }),
    stateDigest: Digest.optional().openapi({
      description: 'Optional: the digest the ops must yield; otherwise 409 and nothing written',
    }),
  })
  .openapi('CheckpointRequest');

export const CheckpointResult = z
  .object({
    seq: Seq,
    stateDigest: Digest,
    treeHead: SignedTreeHeadSchema.optional().openapi({
      description: 'The receipt: the signed tree head just after this checkpoint',
    }),
  })
  .openapi('CheckpointResult');

export const StateQuery = z.object({
  at: z.coerce.number().int().min(1).optional().openapi({
    description: 'The seq to read the state at (time travel); default: the head',
  }),
});

export const StateResult = z
  .object({
    seq: Seq,
    state: z.record(z.string(), z.unknown()),
    stateDigest: Digest,
  })
  .openapi('StateResult');

export const ForkBody = z
  .strictObject({
    newStreamId: z.string().regex(STREAM_ID_PATTERN),
    at: z.number().int().min(1).openapi({ description: 'The source seq to fork at' }),
  })
  .openapi('ForkRequest');

export const ForkResult = z
  .object({
    streamId: z.string(),
    seq: Seq,
    stateDigest: Digest,
    source: z.object({ streamId: z.string(), seq: Seq, hash: z.string() }),
  })
  .openapi('ForkResult');
