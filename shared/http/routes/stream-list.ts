import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { BEARER_SECURITY, json, problemResponses } from '../schemas.js';
import { StreamListQuery, StreamListResult } from './checkpoints-schemas.js';

export interface StreamListRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
}

/** GET /streams: the caller's tenant's streams, by id (stream-list.ts). */
export const streamListRoutes = ({ ledger, keys }: StreamListRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });

  const list = createRoute({
    method: 'get',
    path: '/streams',
    summary: "List the tenant's streams",
    description:
      'Streams in id order from the tenant’s stream index, optionally those whose id starts ' +
      'with `prefix`, after the exclusive cursor `after`; each with its head seq, last ' +
      'update and writer lease while held (times as ISO 8601, as on every route). A page costs one index query plus one head ' +
      'and one lease read per stream. Streams being deleted are left out.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { query: StreamListQuery },
    responses: {
      200: json(StreamListResult, 'A page of streams'),
      ...problemResponses(400, 401, 403, 500, 503),
    },
  });
  app.openapi(list, async (c) => {
    const query = c.req.valid('query');
    const page = await ledger.streamList.list(principalOf(c).tenant, query);
    const iso = (ms: number) => new Date(ms).toISOString();
    const streams = page.streams.map((s) => ({
      ...s,
      updatedAt: iso(s.updatedAt),
      lease: s.lease && { ...s.lease, expiresAt: iso(s.lease.expiresAt) },
    }));
    return c.json({ streams, next: page.next }, 200);
  });

  return app;
};
