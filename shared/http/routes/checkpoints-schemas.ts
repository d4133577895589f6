import { z } from '@hono/zod-openapi';
import { LABEL_PATTERN } from '../../commit/labels.js';
import { MAX_TASK_BYTES, MAX_WRITES_PER_CALL } from '../../state/pending-writes.js';
import { queryInt, queryIntDefault } from '../query-int.js';
import { STREAM_ID_PATTERN } from '../schemas.js';
import { ValueRef } from '../state-schemas.js';

/** Schemas of the checkpoint label, list and pending-write routes (validation and OpenAPI). */

const Seq = z.number().int().min(0);

export const Label = z
  .string()
  .regex(
    LABEL_PATTERN,
    'must be 1..128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit',
  )
  .openapi({ example: '1ef4f797-8335-6428-8001-8a1503f9b875' });

export const LabelParams = z.object({
  streamId: z
    .string()
    .regex(STREAM_ID_PATTERN)
    .openapi({ param: { name: 'streamId', in: 'path' }, example: 'run-2024-06-01.a' }),
  label: Label.openapi({ param: { name: 'label', in: 'path' } }),
});

export const CheckpointLabel = z
  .object({
    label: z.string(),
    seq: Seq.openapi({
      description: 'The seq of its hefesto.delta event (read its state with ?at=)',
    }),
    stateDigest: z.string(),
    meta: z.unknown().optional(),
    parentLabel: z.string().optional(),
    parentSeq: Seq.optional().openapi({ description: 'The baseSeq it was written on, if any' }),
    createdAt: z.number().int().openapi({ description: 'Milliseconds since the epoch' }),
  })
  .openapi('CheckpointLabel', {
    example: {
      label: '1ef4f797-8335-6428-8001-8a1503f9b875',
      seq: 7,
      stateDigest: '3f9a1c0b8e2d4f6a7b5c9d1e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a',
      meta: { source: 'loop', step: 3 },
      parentLabel: '1ef4f797-8335-6427-8000-1c2b3a4d5e6f',
      createdAt: 1764547200000,
    },
  });

export const CheckpointListQuery = z.object({
  before: queryInt({
    min: 1,
    description: 'Only checkpoints with a seq below this (exclusive): a previous page’s `next`',
  }).optional(),
  limit: queryIntDefault({ min: 1, max: 1000, default: 100 }),
});

export const CheckpointList = z
  .object({
    checkpoints: z.array(
      z.object({
        label: z.string(),
        seq: Seq,
        meta: z.unknown().optional(),
        parentLabel: z.string().optional(),
      }),
    ),
    next: Seq.nullable().openapi({ description: 'Pass as `before` to read on; null at the end' }),
  })
  .openapi('CheckpointList', {
    example: {
      checkpoints: [
        { label: '1ef4f797-8335-6428-8001-8a1503f9b875', seq: 7, meta: { step: 3 } },
        { label: '1ef4f797-8335-6427-8000-1c2b3a4d5e6f', seq: 5, meta: { step: 2 } },
      ],
      next: 5,
    },
  });

const Task = z.string().refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_TASK_BYTES, {
  message: `at most ${MAX_TASK_BYTES} bytes of UTF-8`,
});

export const PendingWritesBody = z
  .strictObject({
    taskId: Task.refine((s) => s.length > 0, 'must not be empty'),
    taskPath: Task.default('').openapi({ description: 'LangGraph’s task path; default ""' }),
    writes: z
      .array(
        z
          .strictObject({
            idx: z
              .number()
              .int()
              .min(-(2 ** 31))
              .max(2 ** 31 - 1)
              .openapi({
                description: '>= 0: insert-once; < 0 (special channels): last write wins',
              }),
            channel: z.string().min(1).max(256),
            value: z.unknown().optional().openapi({ description: 'Any JSON value' }),
            ref: ValueRef.optional(), // instead of value: a large value uploaded first (docs/langgraph.md, Limits)
          })
          .refine(
            (w) => (w.value !== undefined) !== (w.ref !== undefined),
            'a write takes exactly one of value and ref',
          ),
      )
      .min(1)
      .max(MAX_WRITES_PER_CALL),
  })
  .openapi('PendingWritesRequest', {
    example: {
      taskId: '6f1c2b3a-task',
      writes: [{ idx: 0, channel: 'messages', value: { role: 'ai', content: 'done' } }],
    },
  });

export const PendingWritesResult = z
  .object({ written: z.number().int().openapi({ description: 'Writes stored by this call' }) })
  .openapi('PendingWritesResult', { example: { written: 1 } });

export const PendingWriteList = z
  .object({
    writes: z.array(
      z.object({
        taskId: z.string(),
        taskPath: z.string(),
        idx: z.number().int(),
        channel: z.string(),
        value: z.unknown().optional().openapi({ description: 'The value, unless sent by ref' }),
        ref: ValueRef.optional().openapi({
          description: 'A value written by ref: read it from its chunks (GET /v1/chunks/{hash})',
        }),
      }),
    ),
  })
  .openapi('PendingWriteList', {
    example: {
      writes: [
        {
          taskId: '6f1c2b3a-task',
          taskPath: '',
          idx: 0,
          channel: 'messages',
          value: { role: 'ai', content: 'done' },
        },
      ],
    },
  });

export const StreamListQuery = z.object({
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{0,128}$/)
    .optional()
    .openapi({ description: 'Only stream ids starting with this' }),
  after: z.string().regex(STREAM_ID_PATTERN).optional().openapi({
    description: 'Exclusive cursor: a previous page’s `next`',
  }),
  limit: queryIntDefault({ min: 1, max: 1000, default: 100 }),
});

export const StreamListResult = z
  .object({
    streams: z.array(
      z.object({
        streamId: z.string(),
        seq: Seq,
        updatedAt: z.iso.datetime().openapi({ description: 'The head’s last update (ISO 8601)' }),
        lease: z
          .object({
            owner: z.string(),
            epoch: z.number().int(),
            draining: z.boolean(),
            expiresAt: z.iso.datetime(),
          })
          .nullable()
          .openapi({ description: 'The writer lease while it is held, else null' }),
      }),
    ),
    next: z.string().nullable().openapi({ description: 'Pass as `after`; null at the end' }),
  })
  .openapi('StreamList', {
    example: {
      streams: [
        {
          streamId: 'run-2024-06-01.a',
          seq: 12,
          updatedAt: '2025-12-01T00:00:00.000Z',
          lease: {
            owner: 'worker-3',
            epoch: 2,
            draining: false,
            expiresAt: '2025-12-01T00:00:30.000Z',
          },
        },
      ],
      next: null,
    },
  });
