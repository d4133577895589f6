import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { NotFoundError, type PublicErrorCode } from '../../domain/errors.js';
import type { AppEnv } from '../context.js';
import { parseDocsManifest, renderDocsPage } from '../docs-page.js';
import { problemExample } from '../openapi-errors.js';
import { Health, json, ProblemSchema, problemResponses } from '../schemas.js';
import { IMMUTABLE, type StaticAssets, serveStatic } from '../static-assets.js';
import { STATUS_BY_CODE } from '../status-table.js';
import { SERVER_VERSION } from '../version.js';
import { AssetParams, assetResponses, pageHeaders } from './console.js';

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
 * What Swagger UI needs, and nothing more (checked in Chromium by test/e2e/console.test.ts,
 * which fails on any CSP violation while it opens operations, models and "Try it out"):
 * - script-src 'self': its bundle and our init file; no inline script, no eval.
 * - style-src 'self': its stylesheet. Its React components set `style` properties through
 *   the CSSOM (hundreds of elements), which a CSP does not govern, and insert no <style>
 *   element, so 'unsafe-inline' is not needed.
 * - img-src 'self' data:: its icons are SVG data: URIs inside its stylesheet (without data:
 *   Chromium blocks them: the one relaxation over the console's policy).
 * - connect-src 'self': the document and "Try it out" requests to this API.
 * No Trusted Types: Swagger UI renders Markdown descriptions as HTML strings.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Public routes about the API itself: the OpenAPI 3.1 document, the reference page that
 * renders it (with its assets), and the health check. Registered on the root app, after the
 * other routes, since the document covers everything in its registry.
 */
export const registerDocs = (app: OpenAPIHono<AppEnv>, assets: StaticAssets): void => {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key, `hk_<keyId>_<secret>`, scoped to one tenant',
  });
  // Error responses name the Problem schema by reference (openapi-errors.ts).
  app.openAPIRegistry.register('Problem', ProblemSchema);
  for (const code of Object.keys(STATUS_BY_CODE) as PublicErrorCode[]) {
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
    summary: 'The API reference (HTML, Swagger UI)',
    responses: {
      200: { description: 'The docs page', content: { 'text/html': { schema: z.string() } } },
      ...problemResponses(404),
    },
  });
  app.openapi(docs, async (c) => {
    const manifest = await assets.read('docs/manifest.json');
    if (!manifest) {
      throw new NotFoundError(
        `the docs are not built: run npm run build:console (${OPENAPI_PATH})`,
      );
    }
    const { title, version } = DOCUMENT_CONFIG.info;
    const html = renderDocsPage(
      parseDocsManifest(manifest.body),
      `${title} ${version}`,
      OPENAPI_PATH,
    );
    return c.html(html, 200, pageHeaders(DOCS_CSP));
  });

  const asset = createRoute({
    method: 'get',
    path: '/docs/assets/{file}',
    summary: 'A file of the reference page (Swagger UI, from its npm package)',
    request: { params: AssetParams },
    responses: assetResponses,
  });
  app.openapi(asset, (c) =>
    serveStatic(c, assets, `docs/${c.req.valid('param').file}`, { 'Cache-Control': IMMUTABLE }),
  );
};
