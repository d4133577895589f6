import { z } from '@hono/zod-openapi';
import { LABEL_PATTERN } from '../commit/labels.js';
import { MAX_SCHEMA_VERSION } from '../domain/state-schema.js';
import { MAX_VALUE_BYTES } from '../domain/state-v2/index.js';
import { SignedTreeHeadSchema } from './proof-schemas.js';
import { queryInt } from './query-int.js';
import { Incarnation, STREAM_ID_PATTERN } from './schemas.js';

/** Schemas of the checkpoint, state and fork routes (validation and OpenAPI in one). */

const Seq = z.number().int().min(0);
const Digest = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .openapi({
    description:
      'The state digest, hex: the Merkle digest of docs/state-v2.md (v1 streams: SHA-256 of the ' +
      'RFC 8785 canonical JSON of the state). The empty state {} of a new stream is ' +
      '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
  });
const Pointer = z
  .string()
  .regex(/^(\/([^~/]|~[01])*)+$/, 'must be an RFC 6901 JSON Pointer below the root, like /a/b')
  .max(1024)
  .openapi({ example: '/messages/-' });

/** A value uploaded as chunks first (PUT /v1/chunks/{hash}), set by its v2 hash. */
export const ValueRef = z
  .strictObject({
    hash: z.string().regex(/^[0-9a-f]{64}$/),
    size: z.number().int().min(1).max(MAX_VALUE_BYTES),
  })
  .openapi('ValueRef', {
    description:
      "A large value by reference: its v2 hash (its root chunk's key) and its canonical size in bytes (docs/state-v2.md, Large values)",
  });

export const DeltaOpSchema = z
  .discriminatedUnion('op', [
    z
      .strictObject({
        op: z.literal('set'),
        path: Pointer,
        value: z.unknown().optional().openapi({ description: 'Any JSON value' }),
        ref: ValueRef.optional(),
      })
      .refine(
        (o) => (o.value !== undefined) !== (o.ref !== undefined),
        'a set takes exactly one of value and ref',
      ),
    z.strictObject({ op: z.literal('delete'), path: Pointer }),
  ])
  .openapi('DeltaOp');

export const MAX_OPS = 1000;

const SchemaVersion = z.number().int().min(1).max(MAX_SCHEMA_VERSION);

export const CheckpointBody = z
  .strictObject({
    ops: z.array(DeltaOpSchema).max(MAX_OPS),
    baseDigest: Digest.openapi({
      description: 'The state digest this delta starts from; not the current one -> 409',
    }),
    stateDigest: Digest.optional().openapi({
      description: 'Optional: the digest the ops must yield; otherwise 409 and nothing written',
    }),
    baseSeq: Seq.optional().openapi({
      description:
        'The checkpoint seq (a delta or fork event, or 0 for {}) whose state the ops apply to; ' +
        'default: the head’s state. Below it: a branch (time travel) whose result becomes the ' +
        'head state; `baseDigest` must be the digest recorded there (else 409). Not a ' +
        'checkpoint seq, or below the pruning point: 400.',
    }),
    label: z
      .string()
      .regex(LABEL_PATTERN)
      .optional()
      .openapi({
        description:
          'A label unique in the stream (e.g. a LangGraph checkpoint id): read it back with GET ' +
          '.../checkpoints/{label}; a label the stream holds is 409 ErrLabelExists',
      }),
    meta: z.unknown().optional().openapi({
      description: 'Small JSON kept with the label (at most 16 KiB as canonical JSON)',
    }),
    parentLabel: z.string().regex(LABEL_PATTERN).optional().openapi({
      description: 'The label of the checkpoint this one continues',
    }),
    schema: SchemaVersion.optional().openapi({
      description:
        'The schema version of the state the ops yield, recorded on the delta ' +
        '(docs/schema-evolution.md); absent: 1',
    }),
    expiry: z
      .strictObject({
        at: z.number().int().min(0),
        path: z.string().max(1024),
        field: z.string(),
      })
      .optional()
      .openapi({
        description:
          'A hint for the compactor (docs/records-v2.md): the entries of the object at `path` ' +
          '(a JSON pointer) whose member `field` is a time (ms) expire then, the earliest at ' +
          '`at`. From `at` on, the compactor reads the verified state and deletes, with a ' +
          'checkpoint of its own on the digest it read, the entries expired by its clock; the ' +
          'hint only says when to look (a wrong one deletes nothing live)',
      }),
    migration: z
      .strictObject({ from: SchemaVersion, to: SchemaVersion })
      .refine((m) => m.to > m.from, 'a migration goes to a higher version')
      .optional()
      .openapi({
        description:
          'Record the ops as a `hefesto.migration` turning the head state of schema version ' +
          '`from` (checked: else 400, or 409 ErrSchemaTooNew when the state is at `to` or ' +
          'later) into version `to`; ops may then be empty (a version change only)',
      }),
  })
  .refine((b) => b.ops.length > 0 || b.migration !== undefined, {
    message: 'ops must not be empty (but for a migration)',
    path: ['ops'],
  })
  .refine((b) => b.schema === undefined || b.migration === undefined, {
    message: 'a migration names its version in `to`: no `schema` beside it',
    path: ['schema'],
  })
  .openapi('CheckpointRequest', {
    example: {
      ops: [
        { op: 'set', path: '/messages', value: [{ role: 'user', text: 'hi' }] },
        { op: 'set', path: '/turn', value: 1 },
      ],
      baseDigest: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
      label: '1ef4f797-8335-6428-8001-8a1503f9b875',
    },
  });

export const CheckpointResult = z
  .object({
    seq: Seq,
    stateDigest: Digest,
    treeHead: SignedTreeHeadSchema.optional().openapi({
      description: 'The receipt: the signed tree head just after this checkpoint',
    }),
    incarnation: Incarnation.optional(),
  })
  .openapi('CheckpointResult', {
    example: {
      seq: 2,
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
    },
  });

export const StateQuery = z.object({
  at: queryInt({
    min: 1,
    description: 'The seq to read the state at (time travel); default: the head',
  }).optional(),
  path: Pointer.optional().openapi({
    description:
      'Read only the value at this RFC 6901 pointer (an array at a canonical index below its ' +
      'length, an object at an own member); a path the state does not hold is 404 ErrNotFound',
    example: '/messages/3',
  }),
  proof: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true')
    .openapi({
      description:
        'With `path`: also answer the Merkle path of the value (docs/state-v2.md), to check it ' +
        'against the state digest the hash chain records. State digest v2 streams only (else 400)',
    }),
});

const DigestVersionField = z.union([z.literal(1), z.literal(2)]).openapi({
  description: 'The stream’s state digest version (1: SHA-256 of the whole state, 2: Merkle)',
});

export const StateResult = z
  .object({
    seq: Seq,
    state: z.record(z.string(), z.unknown()),
    stateDigest: Digest,
    digestVersion: DigestVersionField,
  })
  .openapi('StateResult', {
    example: {
      seq: 2,
      state: { messages: [{ role: 'user', text: 'hi' }], turn: 1 },
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
      digestVersion: 2,
    },
  });

export const StateProofSchema = z
  .object({
    v: z.literal(2),
    digest: Digest,
    path: z.string(),
    value: z.unknown().openapi({ description: 'The value at the path' }),
    nodes: z.array(z.string()).openapi({
      description: 'Base64 hash inputs of the nodes from the state root down to the value',
    }),
  })
  .openapi('StateProof');

export const StateValueResult = z
  .object({
    seq: Seq,
    stateDigest: Digest,
    digestVersion: DigestVersionField,
    path: z.string(),
    value: z.unknown().openapi({ description: 'The value at the path (any JSON)' }),
    proof: StateProofSchema.optional(),
  })
  .openapi('StateValueResult', {
    example: {
      seq: 2,
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
      digestVersion: 2,
      path: '/messages/0',
      value: { role: 'user', text: 'hi' },
    },
  });

export const ForkBody = z
  .strictObject({
    newStreamId: z.string().regex(STREAM_ID_PATTERN),
    at: z.number().int().min(1).openapi({ description: 'The source seq to fork at' }),
  })
  .openapi('ForkRequest', { example: { newStreamId: 'run-2024-06-01.b', at: 2 } });

export const ForkResult = z
  .object({
    streamId: z.string(),
    seq: Seq,
    stateDigest: Digest,
    source: z.object({ streamId: z.string(), seq: Seq, hash: z.string() }),
  })
  .openapi('ForkResult', {
    example: {
      streamId: 'run-2024-06-01.b',
      seq: 1,
      stateDigest: '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31',
      source: {
        streamId: 'run-2024-06-01.a',
        seq: 2,
        hash: 'fbac843f6e0de34c4a45e2e116d91eaa0f5597ac30be008861abf9088dc05548',
      },
    },
  });
