import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { ErrorCode } from '../../domain/errors.js';
import type { AppEnv } from '../context.js';
import { renderDocsPage } from '../docs-page.js';
import { problemExample } from '../openapi-errors.js';
import { Health, json, ProblemSchema } from '../schemas.js';
import { STATUS_BY_CODE } from '../status-table.js';
import { SERVER_VERSION } from '../version.js';

export const OPENAPI_PATH = '/v1/openapi.json';

const DOCUMENT_CONFIG = {
  openapi: '3.1.0',
  info: {
    title: 'Hefesto: durable state for AI agents',
    // The release of the server; the API's own version is the /v1 in its paths.
    version: SERVER_VERSION,
    description:
      'Append-only, SHA-256 hash-chained event streams with delta checkpoints, exactly-once ' +
      'effects and fenced leases. Every route under /v1 takes an API key ' +
      '(`Authorization: Bearer hk_…`) scoped to one tenant. Errors are RFC 9457 ' +
      '`application/problem+json` with a stable `code`; each route lists the codes it can ' +
      'answer under their statuses.',
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
  // Error responses name the Problem schema by reference (openapi-errors.ts).
  app.openAPIRegistry.register('Problem', ProblemSchema);
  for (const code of Object.keys(STATUS_BY_CODE) as ErrorCode[]) {
    app.openAPIRegistry.registerComponent('examples', code, problemExample(code));
  }
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
  let page: string | undefined;
  app.openapi(docs, (c) => {
    page ??= renderDocsPage(document());
    return c.html(page, 200);
  });
};
