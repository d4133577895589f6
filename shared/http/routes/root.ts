import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../context.js';
import { json } from '../schemas.js';
import { OPENAPI_PATH } from './docs.js';

/**
 * `GET /`: where to go from here, as a small JSON document rather than a redirect, so that
 * `curl localhost:8787` and an API client both get an answer they can read (a browser shows
 * the JSON; the `docs` link is one click away).
 */

const ApiIndex = z
  .object({
    name: z.literal('hefesto'),
    docs: z.string().openapi({ example: '/docs', description: 'Human-readable API docs' }),
    openapi: z.string().openapi({ example: OPENAPI_PATH, description: 'OpenAPI 3.1 document' }),
    console: z
      .string()
      .openapi({ example: '/console', description: 'The web console (sign in with a key)' }),
    health: z.string().openapi({ example: '/healthz' }),
  })
  .openapi('ApiIndex', {
    example: {
      name: 'hefesto',
      docs: '/docs',
      openapi: OPENAPI_PATH,
      console: '/console',
      health: '/healthz',
    },
  });

export const registerRoot = (app: OpenAPIHono<AppEnv>): void => {
  const index = createRoute({
    method: 'get',
    path: '/',
    summary: 'Where the docs are',
    responses: {
      200: json(ApiIndex, 'Links to the docs, the OpenAPI document, the console and health'),
    },
  });
  app.openapi(index, (c) =>
    c.json(
      {
        name: 'hefesto' as const,
        docs: '/docs',
        openapi: OPENAPI_PATH,
        console: '/console',
        health: '/healthz',
      },
      200,
    ),
  );
};
