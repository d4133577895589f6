import { z } from '@hono/zod-openapi';
import { MAX_HISTORY_CHANNELS } from '../../state/delta-history.js';
import { MAX_DELTAS } from '../../state/tuple-read.js';
import { queryInt, queryIntDefault } from '../query-int.js';
import { CheckpointLabel, CheckpointList, Label, PendingWriteList } from './checkpoints-schemas.js';

/** Schemas of GET .../tuple and GET .../channel-history (tuple-read.ts, delta-history.ts). */

const Seq = z.number().int().min(0);
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const Writes = PendingWriteList.shape.writes;
const EXAMPLE_DIGEST = '4b97b54420f6316dee64ab0d9b99b7313878c3466a258249ba1c77013dd6bc31';
const EXAMPLE_LABEL = '1ef4f797-8335-6428-8001-8a1503f9b875';

export const TupleQuery = z.object({
  label: Label.optional().openapi({
    description: 'The checkpoint to read; default: the head’s state (labelled or not)',
    example: EXAMPLE_LABEL,
  }),
  sinceSeq: queryInt({
    min: 1,
    description: 'The seq of the state the caller holds (with sinceDigest)',
  })
    .optional()
    .openapi({ example: 2 }),
  sinceDigest: Hex64.optional().openapi({
    description: 'The state digest the caller holds at sinceSeq',
    example: EXAMPLE_DIGEST,
  }),
});

export const TupleResult = z
  .object({
    seq: Seq.openapi({ description: 'The seq of the state read (its delta)' }),
    stateDigest: Hex64,
    digestVersion: z.union([z.literal(1), z.literal(2)]),
    head: z.object({ seq: Seq, hash: Hex64 }).openapi({
      description: 'The chain head this was read at (its seq and hash)',
    }),
    checkpoint: z.union([CheckpointLabel, z.null()]).openapi({
      description: 'The checkpoint at that seq; null when the state there is not labelled',
    }),
    answer: z.enum(['unchanged', 'deltas', 'state']).openapi({
      description:
        '`unchanged`: the state is the one at sinceSeq/sinceDigest (nothing sent); `deltas`: ' +
        'the ops of the deltas after it, to apply in order; `state`: the state whole',
    }),
    deltas: z
      .array(z.object({ seq: Seq, ops: z.array(z.unknown()) }))
      .optional()
      .openapi({ description: `With answer "deltas": at most ${MAX_DELTAS}` }),
    state: z.record(z.string(), z.unknown()).optional(),
    writes: Writes,
  })
  .openapi('TupleResult', {
    example: {
      seq: 2,
      stateDigest: EXAMPLE_DIGEST,
      digestVersion: 2,
      head: { seq: 2, hash: '9c1d0e3a5b7f2c4e6a8b0d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c' },
      checkpoint: {
        label: EXAMPLE_LABEL,
        seq: 2,
        stateDigest: EXAMPLE_DIGEST,
        createdAt: 1764547200000,
      },
      answer: 'deltas',
      deltas: [{ seq: 2, ops: [{ op: 'set', path: '/turn', value: 1 }] }],
      writes: [],
    },
  });

export const HistoryQuery = z.object({
  label: Label.optional().openapi({
    description: 'The checkpoint whose ancestors are walked; default: the head’s state’s',
    example: EXAMPLE_LABEL,
  }),
  channel: z
    .union([z.string().max(256), z.array(z.string().max(256)).max(MAX_HISTORY_CHANNELS)])
    .optional()
    .openapi({
      description: `A channel to walk for (repeatable, at most ${MAX_HISTORY_CHANNELS}; none: an empty answer)`,
      example: 'messages',
    }),
  seedAt: z
    .string()
    .regex(/^(\/([^~/]|~[01])*)*$/, 'must be an RFC 6901 JSON Pointer ("" or /a/b)')
    .max(1024)
    .optional()
    .openapi({
      description:
        'The object of the state holding each channel’s value under its name (default "": the ' +
        'root); an ancestor whose state has `{seedAt}/{channel}` ends that channel’s walk',
      example: '/values',
    }),
});

export const ChannelHistoryResult = z
  .object({
    channels: z.record(
      z.string(),
      z.object({
        writes: Writes.openapi({
          description:
            'The channel’s pending writes on the ancestors, oldest first, each checkpoint’s in ' +
            '(task path, task id, idx) order, the seed’s checkpoint’s included',
        }),
        seed: z
          .object({ label: z.string(), seq: Seq, value: z.unknown() })
          .optional()
          .openapi({ description: 'The nearest ancestor holding the value; absent: none' }),
      }),
    ),
  })
  .openapi('ChannelHistoryResult', {
    example: {
      channels: {
        messages: {
          writes: [
            {
              taskId: 'task-7',
              taskPath: '~__pregel_pull, model',
              idx: 0,
              channel: 'messages',
              value: 'hi',
            },
          ],
          seed: { label: EXAMPLE_LABEL, seq: 2, value: [] },
        },
      },
    },
  });

export const TuplePageQuery = z.object({
  before: queryInt({
    min: 1,
    description: 'Only checkpoints with a seq below this (exclusive): a previous page’s `next`',
  }).optional(),
  beforeLabel: Label.optional().openapi({
    description: 'Only checkpoints below this one (instead of `before`)',
  }),
  limit: queryIntDefault({ min: 1, max: 100, default: 10 }),
});

const Entry = CheckpointList.shape.checkpoints.element;

export const TuplePageResult = z
  .object({
    digestVersion: z.union([z.literal(1), z.literal(2)]),
    tuples: z.array(
      z.object({
        checkpoint: Entry,
        seq: Seq,
        stateDigest: Hex64,
        writes: Writes,
        state: z.record(z.string(), z.unknown()).optional().openapi({
          description:
            'The state whole: the oldest of the page, and any not on the line of the one before',
        }),
        deltas: z
          .array(z.object({ seq: Seq, ops: z.array(z.unknown()) }))
          .optional()
          .openapi({
            description: 'The ops that make it of the state of the (older) tuple after it',
          }),
      }),
    ),
    next: Seq.nullable().openapi({ description: 'Pass as `before` to read on; null at the end' }),
  })
  .openapi('TuplePage', {
    example: {
      digestVersion: 2,
      tuples: [
        {
          checkpoint: { label: 'c2', seq: 3, parentLabel: EXAMPLE_LABEL },
          seq: 3,
          stateDigest: '8e2d4f6a7b5c9d1e0f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a3f9a1c0b',
          writes: [],
          deltas: [{ seq: 3, ops: [{ op: 'set', path: '/turn', value: 2 }] }],
        },
        {
          checkpoint: { label: EXAMPLE_LABEL, seq: 2 },
          seq: 2,
          stateDigest: EXAMPLE_DIGEST,
          writes: [],
          state: { turn: 1 },
        },
      ],
      next: null,
    },
  });
