import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../context.js';
import { problemResponses } from '../schemas.js';
import { ASSET_NAME_PATTERN, IMMUTABLE, type StaticAssets, serveStatic } from '../static-assets.js';

/**
 * The web console at /console: one HTML entry (never cached: it names the current build) and
 * its content-hashed assets (cached for a year). It talks to the API with the key the user
 * types in, through the public routes only; it ships no server code.
 *
 * Its Content-Security-Policy is the strictest the page allows: its own scripts, styles and
 * API only; no inline script or style, no eval, no frames, no forms posting anywhere, and
 * Trusted Types enforced with no policy (the console never parses HTML from strings: every
 * text, event payload included, goes in as text).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

/** Headers of an HTML entry page (the console's and the docs'). */
export const pageHeaders = (csp: string): Record<string, string> => ({
  'Content-Security-Policy': csp,
  'Cache-Control': 'no-cache',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
});

export const AssetParams = z.object({
  file: z
    .string()
    .regex(ASSET_NAME_PATTERN)
    .openapi({ param: { name: 'file', in: 'path' }, example: 'index-3f9a1c0b.js' }),
});

export const assetResponses = {
  200: {
    description: 'The file (gzip when accepted); cached for a year: names carry a content hash',
    content: { 'text/javascript': { schema: z.string() }, 'text/css': { schema: z.string() } },
  },
  ...problemResponses(400, 404),
};

export const registerConsole = (app: OpenAPIHono<AppEnv>, assets: StaticAssets): void => {
  const page = createRoute({
    method: 'get',
    path: '/console',
    summary: 'The web console (HTML)',
    description:
      'Streams, timelines, state at any seq with diffs, verification, effects and leases, ' +
      'for the tenant of the API key you sign in with.',
    responses: {
      200: { description: 'The console', content: { 'text/html': { schema: z.string() } } },
      ...problemResponses(404),
    },
  });
  app.openapi(page, (c) => serveStatic(c, assets, 'console/index.html', pageHeaders(CONSOLE_CSP)));

  const asset = createRoute({
    method: 'get',
    path: '/console/assets/{file}',
    summary: 'A built console asset',
    request: { params: AssetParams },
    responses: assetResponses,
  });
  app.openapi(asset, (c) =>
    serveStatic(c, assets, `console/assets/${c.req.valid('param').file}`, {
      'Cache-Control': IMMUTABLE,
    }),
  );
};
