import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Compactor } from '../../compaction/compactor.js';
import { ForbiddenError } from '../../domain/errors.js';
import type { KeyService } from '../../keys/keys.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { AUTH_ERRORS, errorResponses, STORAGE_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY, json, ScopeSchema } from '../schemas.js';

export interface AdminRoutesDeps {
  keys: KeyService;
  /** The server's own compactor; without one (the Lambda API) there is no compact route. */
  compactor?: Compactor | undefined;
}

const WhoAmI = z
  .object({
    keyId: z
      .string()
      .openapi({ example: '3f9a1c0b7d2e4a61', description: '`root` for HEFESTO_API_KEY' }),
    tenant: z
      .string()
      .openapi({ example: 'acme', description: 'The tenant every request of this key acts on' }),
    scopes: z.array(ScopeSchema),
    operator: z.boolean().openapi({
      description:
        'May create keys for any tenant and run a compaction pass (the operator or root key)',
    }),
  })
  .openapi('WhoAmI', {
    example: {
      keyId: '3f9a1c0b7d2e4a61',
      tenant: 'acme',
      scopes: ['read', 'write'],
      operator: false,
    },
  });

const int = z.number().int().min(0);
const CompactionReport = z
  .object({
    examined: int,
    compacted: int,
    busy: int,
    errors: int.openapi({ description: 'Streams whose visit failed (logged by the server)' }),
    segmentsMerged: int,
    segmentsWritten: int,
    bytesBefore: int,
    bytesAfter: int,
    objectsDeleted: int,
    snapshotsWritten: int,
    streamsPruned: int,
    streamsDeleted: int,
    orphansFound: int,
    tilesWritten: int,
    treesBackfilled: int,
    headsWitnessed: int,
    witnessObjects: int,
    chunksDeleted: int.openapi({ description: 'Chunks the tenant chunk GC deleted' }),
    entriesExpired: int.openapi({
      description: 'Expired state entries deleted (a delta’s `expiry` hint, docs/records-v2.md)',
    }),
    more: z.boolean().openapi({ description: 'Work was left for the next pass' }),
    durationMs: int,
  })
  .openapi('CompactionReport');

/**
 * `GET /v1/whoami`: the presented key's tenant and scopes (any valid key), so that a tool
 * learns its tenant from its key instead of being told it.
 *
 * `POST /v1/admin/compact`: one compaction and retention pass now, on this server's stores.
 * Operator-wide, not tenant-scoped: a pass works through the work of every tenant (the
 * compactor's work markers are not per tenant), so it needs the operator capability (the
 * operator key printed at the first start, or the root key); a tenant admin gets 403. Safe
 * next to the server's own timer: two passes never work on the same stream at once.
 */
export const adminRoutes = ({ keys, compactor }: AdminRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();

  const whoami = createRoute({
    method: 'get',
    path: '/whoami',
    summary: "The calling key's tenant and scopes",
    security: BEARER_SECURITY,
    middleware: [requireKey({ keys })] as const,
    responses: {
      200: json(WhoAmI, 'Who the key is'),
      ...errorResponses('ErrUnauthorized', STORAGE_ERRORS),
    },
  });
  app.openapi(whoami, (c) => {
    const { keyId, tenant, scopes, root } = principalOf(c);
    return c.json({ keyId, tenant, scopes: [...scopes], operator: root }, 200);
  });

  if (compactor === undefined) return app;
  const compact = createRoute({
    method: 'post',
    path: '/admin/compact',
    summary: 'Run one compaction and retention pass now (operator key)',
    description:
      'Operator-wide: the pass covers the work of every tenant, bounded like a scheduled one ' +
      '(HEFESTO_COMPACT_MAX_STREAMS, HEFESTO_COMPACT_MAX_RUN_MS); `more: true` says work was ' +
      'left for the next pass. Served by the embedded server only; on AWS the schedule runs it.',
    security: BEARER_SECURITY,
    middleware: [requireKey({ keys, scope: 'admin' })] as const,
    responses: {
      200: json(CompactionReport, 'What the pass did'),
      ...errorResponses(AUTH_ERRORS, STORAGE_ERRORS),
    },
  });
  app.openapi(compact, async (c) => {
    if (!principalOf(c).root) {
      throw new ForbiddenError(
        'a compaction pass covers every tenant: it needs the operator key (printed at the ' +
          'first start) or the root key (HEFESTO_API_KEY)',
      );
    }
    return c.json(await compactor.run(), 200);
  });

  return app;
};
