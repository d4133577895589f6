import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { BEARER_SECURITY, problemResponses, StreamParams } from '../schemas.js';

export interface StreamDeleteRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
}

/** DELETE /streams/{streamId} (stream-delete.ts). */
export const streamDeleteRoutes = ({ ledger, keys }: StreamDeleteRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const admin = requireKey({ keys, scope: 'admin', why: 'deleting a stream destroys its history' });

  const remove = createRoute({
    method: 'delete',
    path: '/streams/{streamId}',
    summary: 'Delete a stream',
    description:
      'Marks the stream deleted: from this answer on it reads as 404 ErrStreamNotFound and ' +
      'refuses writes; the scheduled compactor then removes its objects and records (after ' +
      'its grace period) and frees the id. Admin scope. A stream already being deleted is 404.',
    security: BEARER_SECURITY,
    middleware: [admin] as const,
    request: { params: StreamParams },
    responses: {
      204: { description: 'Deleted (storage is reclaimed by the compactor)' },
      ...problemResponses(400, 401, 403, 404, 500, 503),
    },
  });
  app.openapi(remove, async (c) => {
    const { streamId } = c.req.valid('param');
    await ledger.streamDeleter.delete(principalOf(c).tenant, streamId);
    return c.body(null, 204);
  });

  return app;
};
