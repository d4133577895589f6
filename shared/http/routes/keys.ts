import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { HttpLimits } from '../../domain/limits.js';
import type { KeyService } from '../../keys/keys.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { jsonBodyOf } from '../json-body.js';
import { AUTH_ERRORS, errorResponses, STORAGE_ERRORS, WRITE_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY, CreatedKey, CreateKeyBody, json, KeyParams } from '../schemas.js';

export interface KeyRoutesDeps {
  keys: KeyService;
  limits: HttpLimits;
}

/** /keys: create and revoke API keys (admin scope; the root key for any tenant). */
export const keyRoutes = ({ keys, limits }: KeyRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const admin = requireKey({ keys, scope: 'admin' });

  const create = createRoute({
    method: 'post',
    path: '/keys',
    summary: 'Create an API key',
    description:
      'An admin key creates keys for its own tenant; the root key (HEFESTO_API_KEY) for any. ' +
      'The secret is returned once; only its SHA-256 is stored.',
    security: BEARER_SECURITY,
    middleware: [admin, jsonBodyOf(limits)] as const,
    request: {
      body: { required: true, content: { 'application/json': { schema: CreateKeyBody } } },
    },
    responses: {
      201: json(CreatedKey, 'The new key'),
      ...errorResponses(WRITE_ERRORS),
    },
  });
  app.openapi(create, async (c) => {
    const by = principalOf(c);
    const body = c.req.valid('json');
    const issued = await keys.create(by, { tenant: body.tenant ?? by.tenant, scopes: body.scopes });
    const { id, key, tenant, scopes } = issued;
    return c.json({ id, key, tenant, scopes }, 201);
  });

  const revoke = createRoute({
    method: 'delete',
    path: '/keys/{id}',
    summary: 'Revoke an API key',
    description: 'After this the key is refused (401). Revoking twice is fine.',
    security: BEARER_SECURITY,
    middleware: [admin] as const,
    request: { params: KeyParams },
    responses: {
      204: { description: 'Revoked' },
      ...errorResponses(AUTH_ERRORS, STORAGE_ERRORS, 'ErrInvalidInput', 'ErrNotFound'),
    },
  });
  app.openapi(revoke, async (c) => {
    await keys.revoke(principalOf(c), c.req.valid('param').id);
    return c.body(null, 204);
  });

  return app;
};
