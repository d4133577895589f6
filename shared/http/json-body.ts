import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import {
  InvalidInputError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from '../domain/errors.js';
import type { AppEnv } from './context.js';

export interface JsonBodyOptions {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
}

const isJson = (contentType: string | undefined): boolean =>
  contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json';

/**
 * Guards a route that takes a JSON body, in this order: Content-Type must be
 * application/json (415), the body must fit in `maxBytes` (413; a declared Content-Length
 * is refused before reading, a streamed body as soon as it passes the limit), and it must
 * parse as JSON (400). The parsed body is cached on the request for the schema validator.
 */
export const jsonBody = ({ maxBytes }: JsonBodyOptions): MiddlewareHandler<AppEnv> => {
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
      try {
        await c.req.json();
      } catch {
        throw new InvalidInputError('the request body is not valid JSON');
      }
      await next();
    });
  };
};
