import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from 'pino';
import type { Clock } from '../ports/clock.js';
import type { AppEnv } from './context.js';
import { STREAM_ID_PATTERN } from './schemas.js';

export interface RequestLogOptions {
  logger: Logger;
  clock: Clock;
}

const errorFields = (err: unknown) =>
  err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { err };

/**
 * One JSON line per request: tenant, stream, route (the pattern, not the URL), method,
 * status, latencyMs, requestId and the error code if any. The fields are picked one by one
 * so that no header (Authorization), key or body (payloads) can ever reach the log.
 * Unexpected errors (500) add the error itself, which never holds request data.
 */
export const requestLog = ({ logger, clock }: RequestLogOptions): MiddlewareHandler<AppEnv> =>
  async function requestLog(c, next) {
    const started = clock.now();
    await next();
    const status = c.res.status;
    const stream = c.req.param('streamId');
    const internal = c.get('internalError');
    const line = {
      tenant: c.get('principal')?.tenant,
      stream: stream !== undefined && STREAM_ID_PATTERN.test(stream) ? stream : undefined,
      route: routePath(c, -1),
      method: c.req.method,
      status,
      latencyMs: clock.now() - started,
      requestId: c.get('requestId'),
      code: c.get('errorCode'),
      ...(internal === undefined ? {} : { error: errorFields(internal) }),
    };
    if (status >= 500) logger.error(line, 'request failed');
    else logger.info(line, 'request');
  };
