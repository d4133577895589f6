import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../context.js';
import { renderDocsPage } from '../docs-page.js';
import { Health, json } from '../schemas.js';

export const OPENAPI_PATH = '/v1/openapi.json';

const DOCUMENT_CONFIG = {
  openapi: '3.1.0',
  info: {
    title: 'Hefesto API',
    version: '1',
    description:
      'Durable state for AI agents: append-only, SHA-256 hash-chained event streams. ' +
      'Errors are RFC 9457 application/problem+json with a stable `code`.',
  },
};

/**
 * Public routes about the API itself: the OpenAPI 3.1 document, the human docs page rendered
 * from it, and the health check. Registered on the root app, after the other routes, since
 * the document covers everything in its registry.
 */
export const registerDocs = (app: OpenAPIHono<AppEnv>): void => {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key, `hk_<keyId>_<secret>`, scoped to one tenant',
  });
  let cached: ReturnType<typeof app.getOpenAPI31Document> | undefined;
  // The registry is complete once the app is built, so the document is generated once.
  const document = () => {
    cached ??= app.getOpenAPI31Document(DOCUMENT_CONFIG);
    return cached;
  };

  const health = createRoute({
    method: 'get',
    path: '/healthz',
    summary: 'Liveness check',
    responses: { 200: json(Health, 'The process is serving') },
  });
  app.openapi(health, (c) => c.json({ ok: true as const }, 200));

  const openapi = createRoute({
    method: 'get',
    path: OPENAPI_PATH,
    summary: 'This OpenAPI 3.1 document',
    responses: { 200: json(z.record(z.string(), z.unknown()), 'The OpenAPI document') },
  });
  app.openapi(openapi, (c) => c.json(document() as unknown as Record<string, unknown>, 200));

  const docs = createRoute({
    method: 'get',
    path: '/docs',
    summary: 'Human-readable API docs (HTML)',
    responses: {
      200: { description: 'The docs page', content: { 'text/html': { schema: z.string() } } },
    },
  });
  app.openapi(docs, (c) => c.html(renderDocsPage(document()), 200));
};
