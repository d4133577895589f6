import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { RetentionView } from '../../compaction/retention.js';
import type { HttpLimits } from '../../domain/limits.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { jsonBodyOf } from '../json-body.js';
import { errorResponses, READ_ERRORS, WRITE_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY, json, StreamParams } from '../schemas.js';

export interface RetentionRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

const MAX_SECONDS = 100 * 365 * 86_400;

export const RetentionBody = z
  .strictObject({
    ttlSeconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_SECONDS)
      .nullable()
      .optional()
      .openapi({
        description:
          'Delete the whole stream this many seconds from now (null: keep it forever). The ' +
          'scheduled compactor deletes it: from then on it answers 404 and its id is free.',
        example: 2_592_000,
      }),
    pruneAfterSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_SECONDS)
      .nullable()
      .optional()
      .openapi({
        description:
          'Prune events older than this (null: never). Reads before the pruning point answer ' +
          '410 ErrPruned; everything after it stays verifiable from the hash recorded there.',
        example: 604_800,
      }),
  })
  .refine((b) => b.ttlSeconds !== undefined || b.pruneAfterSeconds !== undefined, {
    message: 'give ttlSeconds, pruneAfterSeconds or both',
  })
  .openapi('RetentionRequest', { example: { ttlSeconds: 2_592_000, pruneAfterSeconds: 604_800 } });

export const RetentionResult = z
  .object({
    streamId: z.string(),
    expiresAt: z.iso.datetime().nullable().openapi({ description: 'When the stream is deleted' }),
    pruneAfterSeconds: z.number().int().nullable(),
    prunedSeq: z.number().int().nullable().openapi({
      description: 'Events up to here were pruned; verification starts from prunedHash',
    }),
    prunedHash: z.string().nullable(),
  })
  .openapi('Retention', {
    example: {
      streamId: 'run-2024-06-01.a',
      expiresAt: '2024-07-01T09:30:00.000Z',
      pruneAfterSeconds: 604_800,
      prunedSeq: null,
      prunedHash: null,
    },
  });

const resultOf = (streamId: string, view: RetentionView) => ({
  streamId,
  expiresAt: view.expiresAt === undefined ? null : new Date(view.expiresAt).toISOString(),
  pruneAfterSeconds: view.pruneAfterMs === undefined ? null : Math.round(view.pruneAfterMs / 1000),
  prunedSeq: view.prunedSeq ?? null,
  prunedHash: view.prunedHash ?? null,
});

const ms = (seconds: number | null | undefined) =>
  seconds === undefined ? undefined : seconds === null ? null : seconds * 1000;

/** /streams/{streamId}/retention: a stream's TTL and pruning horizon. */
export const retentionRoutes = ({ ledger, keys, limits }: RetentionRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  // Retention destroys history (ttlSeconds: 0 deletes the stream, a horizon prunes it), and
  // it is policy: a write key may only name a TTL when its append creates a stream.
  const admin = requireKey({ keys, scope: 'admin', why: 'retention deletes history' });

  const get = createRoute({
    method: 'get',
    path: '/streams/{streamId}/retention',
    summary: 'Retention of a stream',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams },
    responses: {
      200: json(RetentionResult, 'Its TTL, pruning horizon and pruning point'),
      ...errorResponses(READ_ERRORS, 'ErrStreamNotFound'),
    },
  });
  app.openapi(get, async (c) => {
    const { streamId } = c.req.valid('param');
    const view = await ledger.retention.get(principalOf(c).tenant, streamId);
    return c.json(resultOf(streamId, view), 200);
  });

  const put = createRoute({
    method: 'put',
    path: '/streams/{streamId}/retention',
    summary: 'Set the retention of a stream',
    description:
      'Sets the TTL and/or the pruning horizon of an existing stream (a field left out is ' +
      'unchanged). Needs the admin scope: it deletes history. New streams get the deployment default TTL (HEFESTO_RETENTION_DAYS), or ' +
      'the `ttlSeconds` of the append that creates them.',
    security: BEARER_SECURITY,
    middleware: [admin, jsonBodyOf(limits)] as const,
    request: {
      params: StreamParams,
      body: { required: true, content: { 'application/json': { schema: RetentionBody } } },
    },
    responses: {
      200: json(RetentionResult, 'The retention now'),
      ...errorResponses(WRITE_ERRORS, 'ErrStreamNotFound'),
    },
  });
  app.openapi(put, async (c) => {
    const { streamId } = c.req.valid('param');
    const body = c.req.valid('json');
    const view = await ledger.retention.set(principalOf(c).tenant, streamId, {
      ttlMs: ms(body.ttlSeconds),
      pruneAfterMs: ms(body.pruneAfterSeconds),
    });
    return c.json(resultOf(streamId, view), 200);
  });

  return app;
};
