import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { PayloadTooLargeError, UnsupportedMediaTypeError } from '../../domain/errors.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { MAX_UPLOAD_BYTES } from '../../state/values.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { errorResponses, READ_ERRORS, WRITE_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY } from '../schemas.js';

export interface ChunkRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
}

const OCTETS = 'application/octet-stream';
const HASH = /^[0-9a-f]{64}$/;

const ChunkParams = z.object({
  hash: z
    .string()
    .regex(HASH)
    .openapi({ param: { name: 'hash', in: 'path' }, description: "The chunk's v2 hash, hex" }),
});

const ChunkStored = z.object({ hash: z.string(), size: z.number().int() }).openapi('ChunkStored', {
  example: { hash: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327', size: 4 },
});

/** Raw bytes, at most one chunk: 415 for another type, 413 past the limit (before reading). */
const chunkBody: MiddlewareHandler<AppEnv> = (() => {
  const limit = bodyLimit({
    maxSize: MAX_UPLOAD_BYTES,
    onError: () => {
      throw new PayloadTooLargeError(`a chunk is at most ${MAX_UPLOAD_BYTES} bytes`);
    },
  });
  return async (c, next) => {
    // A bad {hash} is the validator's 400, whatever the body.
    if (!HASH.test(c.req.param('hash') ?? '')) return next();
    const type = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (type !== OCTETS) throw new UnsupportedMediaTypeError(`a chunk is sent as ${OCTETS}`);
    await limit(c, next);
  };
})();

/**
 * Large values (docs/state-v2.md): PUT /v1/chunks/{hash} uploads one chunk of a value (a
 * client cuts a value with `chunksOfValue`, children first), then a checkpoint sets it with
 * `{op:"set", path, ref:{hash, size}}`. GET reads a chunk back, so a client reads a large value
 * page by page (`readValue` over this route) without one response holding all of it.
 */
export const chunkRoutes = ({ ledger, keys }: ChunkRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const write = requireKey({ keys, scope: 'write' });

  const put = createRoute({
    method: 'put',
    path: '/chunks/{hash}',
    summary: 'Upload one chunk of a large value',
    description:
      `The body is the chunk's bytes (${OCTETS}, at most ${MAX_UPLOAD_BYTES} bytes); it must hash ` +
      'to {hash} by the rules of docs/state-v2.md (else 400). Idempotent. The chunk is kept for ' +
      'a day, or as long as a checkpoint that sets its value by ref is in a stream.',
    security: BEARER_SECURITY,
    middleware: [write, chunkBody] as const,
    request: {
      params: ChunkParams,
      body: { required: true, content: { [OCTETS]: { schema: z.any() } } },
    },
    responses: {
      201: {
        description: 'Stored (or already stored)',
        content: { 'application/json': { schema: ChunkStored } },
      },
      ...errorResponses(WRITE_ERRORS),
    },
  });
  app.openapi(put, async (c) => {
    const { hash } = c.req.valid('param');
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    const stored = await ledger.states.values.putChunk(principalOf(c).tenant, hash, bytes);
    return c.json({ hash, size: stored.size }, 201);
  });

  const get = createRoute({
    method: 'get',
    path: '/chunks/{hash}',
    summary: 'Read one chunk',
    description:
      "A chunk of the key's tenant, as stored (check it against its hash: docs/state-v2.md).",
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: ChunkParams },
    responses: {
      200: { description: 'The chunk', content: { [OCTETS]: { schema: z.any() } } },
      ...errorResponses(READ_ERRORS, 'ErrNotFound'),
    },
  });
  app.openapi(get, async (c) => {
    const { hash } = c.req.valid('param');
    const bytes = await ledger.states.values.getChunk(principalOf(c).tenant, hash);
    return c.body(Buffer.from(bytes), 200, { 'content-type': OCTETS });
  });

  return app;
};
