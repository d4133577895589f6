import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { copyThreadVia } from '../../domain/copy-thread.js';
import { NotFoundError, StreamNotFoundError } from '../../domain/errors.js';
import type { HttpLimits } from '../../domain/limits.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { copyIo } from '../copy-io.js';
import { jsonBodyOf } from '../json-body.js';
import { errorResponses, VERIFIED_READ_ERRORS, WRITE_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY, json, STREAM_ID_PATTERN, StreamParams } from '../schemas.js';
import { Label } from './checkpoints-schemas.js';

export interface CopyThreadRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

/** Checkpoints one call copies by default, and at most. */
export const COPY_CHECKPOINTS_PER_CALL = 16;
export const MAX_COPY_CHECKPOINTS_PER_CALL = 100;
/** Bytes of ops and writes after which a call stops (after the checkpoint that passed them). */
export const COPY_BYTES_PER_CALL = 4 * 1024 * 1024;

const CopyThreadBody = z
  .strictObject({
    label: Label.optional().openapi({
      description: 'The checkpoint to copy up to (a checkpoint id); default: the newest',
    }),
    to: z.strictObject({
      streamId: z.string().regex(STREAM_ID_PATTERN).openapi({ description: 'The new stream' }),
      threadId: z
        .string()
        .min(1)
        .max(256)
        .openapi({ description: 'The thread id written into each copied state' }),
    }),
    maxCheckpoints: z
      .number()
      .int()
      .min(1)
      .max(MAX_COPY_CHECKPOINTS_PER_CALL)
      .optional()
      .openapi({
        description: `Checkpoints this call copies at most (default ${COPY_CHECKPOINTS_PER_CALL})`,
      }),
  })
  .openapi('CopyThreadRequest', {
    example: {
      label: '1ef4f797-8335-6428-8001-8a1503f9b875',
      to: { streamId: 'lg.ticket-2.', threadId: 'ticket-2' },
    },
  });

const CopyThreadResult = z
  .object({
    done: z.boolean().openapi({ description: 'false: call again with the same body' }),
    checkpoints: z.number().int().openapi({ description: 'Checkpoints the copy has in all' }),
    copied: z.number().int().openapi({ description: 'Checkpoints the new stream holds so far' }),
    streamId: z.string(),
  })
  .openapi('CopyThreadResult', {
    example: { done: true, checkpoints: 3, copied: 3, streamId: 'lg.ticket-2.' },
  });

/**
 * POST /streams/{streamId}/copy-thread: a LangGraph thread forked at a checkpoint into a new
 * thread HefestoSaver resumes (shared/domain/copy-thread.ts over the services: copy-io.ts), a
 * bounded part of it per call.
 */
export const copyThreadRoutes = ({ ledger, keys, limits }: CopyThreadRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const write = requireKey({ keys, scope: 'write' });

  const copy = createRoute({
    method: 'post',
    path: '/streams/{streamId}/copy-thread',
    summary: 'Copy a LangGraph thread up to a checkpoint into a new thread (a part per call)',
    description:
      'The checkpoints from the thread’s first to `label` along their parent labels, each with ' +
      'its label, metadata, parent, pending writes and the values it holds by ref, its state’s ' +
      '`thread` rewritten to `to.threadId`, then an `lg.copy` event naming the source ' +
      '(docs/langgraph.md, "Time travel"). One call copies at most `maxCheckpoints` checkpoints ' +
      `(or stops after ${COPY_BYTES_PER_CALL} bytes of changes) and answers \`done: false\`; ` +
      'call again with the same body until `done`. A call whose answer was lost, or that died ' +
      'midway, is finished by the next. Large changes are stored as chunks, so any thread the ' +
      'saver wrote copies. A `to.streamId` with a history of its own (not a part of this ' +
      'copy) is 409 ErrStreamExists, before anything is written; both streams are the key’s ' +
      'tenant’s.',
    security: BEARER_SECURITY,
    middleware: [write, jsonBodyOf(limits)] as const,
    request: {
      params: StreamParams,
      body: { required: true, content: { 'application/json': { schema: CopyThreadBody } } },
    },
    responses: {
      200: json(CopyThreadResult, 'How far the copy got'),
      ...errorResponses(
        WRITE_ERRORS,
        VERIFIED_READ_ERRORS,
        'ErrStreamNotFound',
        'ErrNotFound',
        'ErrPruned',
        'ErrDivergenceDetected',
        'ErrStreamExists',
      ),
    },
  });
  app.openapi(copy, async (c) => {
    const { streamId } = c.req.valid('param');
    const req = c.req.valid('json');
    const io = copyIo(ledger, principalOf(c).tenant);
    let label = req.label;
    if (label === undefined) {
      const head = await io.head(streamId);
      if (head === undefined) throw new StreamNotFoundError(streamId);
      label = head.checkpoint?.label;
      if (label === undefined) throw new NotFoundError(`stream ${streamId} has no checkpoint`);
    }
    const progress = await copyThreadVia(
      io,
      { from: { streamId, label }, to: req.to },
      {
        maxCheckpoints: req.maxCheckpoints ?? COPY_CHECKPOINTS_PER_CALL,
        maxBytes: COPY_BYTES_PER_CALL,
      },
    );
    return c.json({ ...progress, streamId: req.to.streamId }, 200);
  });

  return app;
};
