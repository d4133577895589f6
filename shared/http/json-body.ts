import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import {
  InvalidInputError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '../domain/errors.js';
import { DEFAULT_LIMITS, exceedsDepth, type HttpLimits } from '../domain/limits.js';
import type { AppEnv } from './context.js';

export interface JsonBodyOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** Deepest nesting of objects and arrays accepted. Default DEFAULT_LIMITS.maxJsonDepth. */
  maxDepth?: number;
}

const isJson = (contentType: string | undefined): boolean =>
  contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';

/**
 * Guards a route that takes a JSON body, in this order: Content-Type must be
 * application/json (415), the body must fit in `maxBytes` (413; a declared Content-Length
 * is refused before reading, a streamed body as soon as it passes the limit), it must parse
 * as JSON (400), and nest no deeper than `maxDepth` (400). The parsed body is cached on the
 * request for the schema validator. Every route with a body takes it through here, so no
 * deep value reaches a handler, a service or storage: a payload thousands of levels deep
 * would later overflow the stack of every recursive serializer that met it.
 */
export const jsonBody = ({
  maxBytes,
  maxDepth = DEFAULT_LIMITS.maxJsonDepth,
}: JsonBodyOptions): MiddlewareHandler<AppEnv> => {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new PayloadTooLargeError(`the request body exceeds ${maxBytes} bytes`);
    },
  });
  return async function jsonBody(c, next) {
    if (!isJson(c.req.header('content-type'))) {
      throw new UnsupportedMediaTypeError('the request body must be application/json');
    }
    await limit(c, async () => {
      let body: unknown;
      try {
        body = await c.req.json();
      } catch {
        throw new InvalidInputError('the request body is not valid JSON');
      }
      if (exceedsDepth(body, maxDepth)) {
        throw new InvalidInputError(`the request body nests deeper than ${maxDepth} levels`);
      }
      await next();
    });
  };
};

/** The body guard with the app's limits (every route with a body uses this). */
export const jsonBodyOf = (limits: Pick<HttpLimits, 'maxBodyBytes' | 'maxJsonDepth'>) =>
  jsonBody({ maxBytes: limits.maxBodyBytes, maxDepth: limits.maxJsonDepth });
