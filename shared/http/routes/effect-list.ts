import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { EFFECT_KEY_PATTERN } from '../effect-schemas.js';
import { queryIntDefault } from '../query-int.js';
import { BEARER_SECURITY, json, problemResponses, StreamParams } from '../schemas.js';

const EffectListQuery = z.object({
  after: z.string().regex(EFFECT_KEY_PATTERN).optional().openapi({
    description: 'Exclusive cursor: the `next` of the previous page (an effect key)',
  }),
  limit: queryIntDefault({ min: 1, max: 1000, default: 100 }),
});

const ListedEffect = z
  .object({
    effectKey: z.string(),
    kind: z.string(),
    status: z.enum(['acquired', 'unknown_outcome', 'completed', 'failed']).openapi({
      description:
        'acquired: a holder’s reservation stands; unknown_outcome: it lapsed unfinished (the ' +
        'next begin must reconcile with the external system); completed; failed',
    }),
    sagaId: z.string().nullable(),
    attempts: z.number().int(),
    intent: z.unknown(),
    compensation: z.unknown(),
    result: z.unknown(),
    error: z.unknown(),
    createdAt: z.number().int(),
    finishedAt: z.number().int().nullable(),
    leaseExpiresAt: z.number().int(),
    eventSeq: z.number().int().nullable().openapi({ description: 'Seq of its ledger event' }),
  })
  .openapi('ListedEffect');

const EffectListPage = z
  .object({ effects: z.array(ListedEffect), next: z.string().nullable() })
  .openapi('EffectListPage', {
    example: {
      effects: [
        {
          effectKey: 'pay-order-17',
          kind: 'payment',
          status: 'completed',
          sagaId: 'order-17',
          attempts: 1,
          intent: { eur: 5 },
          compensation: { refund: 'pay-order-17' },
          result: { paymentId: 'p_81' },
          error: null,
          createdAt: 1_764_590_000_000,
          finishedAt: 1_764_590_000_900,
          leaseExpiresAt: 1_764_590_030_000,
          eventSeq: 4,
        },
      ],
      next: null,
    },
  });

/** GET /streams/{streamId}/effects: a stream's exactly-once effects and their status. */
export const effectListRoutes = ({ ledger, keys }: { ledger: Ledger; keys: KeyService }) => {
  const app = new OpenAPIHono<AppEnv>();
  const list = createRoute({
    method: 'get',
    path: '/streams/{streamId}/effects',
    summary: 'List the effects of a stream',
    description: 'In effect-key order, with status and saga; holder tokens are never shown.',
    security: BEARER_SECURITY,
    middleware: [requireKey({ keys, scope: 'read' })] as const,
    request: { params: StreamParams, query: EffectListQuery },
    responses: {
      200: json(EffectListPage, 'A page of effects'),
      ...problemResponses(400, 401, 403, 404, 503),
    },
  });
  app.openapi(list, async (c) => {
    const { streamId } = c.req.valid('param');
    const { after, limit } = c.req.valid('query');
    const page = await ledger.effectList.list(principalOf(c).tenant, streamId, { after, limit });
    return c.json(page as z.infer<typeof EffectListPage>, 200);
  });
  return app;
};
