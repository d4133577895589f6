import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { KeyService } from '../../services/keys.js';
import type { Ledger } from '../../services/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { BEARER_SECURITY, json, problemResponses, STREAM_ID_PATTERN } from '../schemas.js';

export const STREAM_LIST_LIMIT = { default: 100, max: 1000 } as const;

/** A stream-id prefix is itself shaped like a stream id (every prefix of an id is one). */
const ListQuery = z.object({
  prefix: z
    .string()
    .regex(STREAM_ID_PATTERN, 'must be the start of a stream id')
    .optional()
    .openapi({ description: 'Only streams whose id starts with this', example: 'run-' }),
  after: z.string().regex(STREAM_ID_PATTERN, 'must be a stream id').optional().openapi({
    description: 'Exclusive cursor: the `next` of the previous page (a stream id)',
  }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(STREAM_LIST_LIMIT.max)
    .default(STREAM_LIST_LIMIT.default),
});

const ListedLease = z
  .object({
    owner: z.string(),
    epoch: z.number().int(),
    draining: z.boolean(),
    expiresAt: z.number().int().openapi({ description: 'ms since the epoch' }),
  })
  .openapi('ListedLease');

export const StreamListPage = z
  .object({
    streams: z.array(
      z.object({
        streamId: z.string(),
        seq: z.number().int().openapi({ description: 'The head seq' }),
        updatedAt: z.number().int().openapi({ description: 'When the head last moved (ms)' }),
        lease: ListedLease.nullable().openapi({
          description: 'The lease while held (active, not expired); null when free',
        }),
      }),
    ),
    next: z.string().nullable().openapi({
      description: 'Pass as `after` to read on; null at the end of the list',
    }),
  })
  .openapi('StreamListPage');

/** GET /streams: the key's tenant's streams in id order, searchable by prefix. */
export const streamListRoutes = ({ ledger, keys }: { ledger: Ledger; keys: KeyService }) => {
  const app = new OpenAPIHono<AppEnv>();
  const list = createRoute({
    method: 'get',
    path: '/streams',
    summary: 'List streams (by id prefix)',
    description:
      'The streams of the key’s tenant in id order with their head seq, last update and ' +
      'lease. A page costs one index query and two reads per stream listed, whatever the ' +
      'tenant holds. Streams being deleted by retention are left out.',
    security: BEARER_SECURITY,
    middleware: [requireKey({ keys, scope: 'read' })] as const,
    request: { query: ListQuery },
    responses: {
      200: json(StreamListPage, 'A page of streams'),
      ...problemResponses(400, 401, 403, 503),
    },
  });
  app.openapi(list, async (c) => {
    const { prefix, after, limit } = c.req.valid('query');
    const page = await ledger.streamList.list(principalOf(c).tenant, { prefix, after, limit });
    return c.json(page, 200);
  });
  return app;
};
