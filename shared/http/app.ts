import { OpenAPIHono } from '@hono/zod-openapi';
import { requestId } from 'hono/request-id';
import type { Logger } from 'pino';
import type { Clock } from '../ports/clock.js';
import type { KeyService } from '../services/keys.js';
import type { Ledger } from '../services/ledger.js';
import type { AppEnv } from './context.js';
import { DEFAULT_LIMITS, type HttpLimits } from './limits.js';
import { notFoundHandler, problemHandler } from './problem.js';
import { requestLog } from './request-log.js';
import { registerDocs } from './routes/docs.js';
import { effectRoutes } from './routes/effects.js';
import { keyRoutes } from './routes/keys.js';
import { retentionRoutes } from './routes/retention.js';
import { stateRoutes } from './routes/state.js';
import { streamRoutes } from './routes/streams.js';
import { validationHook } from './validation.js';

export interface AppDeps {
  ledger: Ledger;
  keys: KeyService;
  logger: Logger;
  clock: Clock;
  /** Defaults: DEFAULT_LIMITS. */
  limits?: Partial<HttpLimits>;
}

/**
 * The HTTP API, one app for both ways to serve it (node server and Lambda). Every request:
 * request id -> request log -> route (auth, body guard, schema validation) -> handler ->
 * service. Every error leaves through the problem handler.
 */
export const createApp = (deps: AppDeps): OpenAPIHono<AppEnv> => {
  const limits: HttpLimits = { ...DEFAULT_LIMITS, ...deps.limits };
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use('*', requestId(), requestLog({ logger: deps.logger, clock: deps.clock }));
  app.onError(problemHandler);
  app.notFound(notFoundHandler);

  app.route('/v1', streamRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', stateRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', effectRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', retentionRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', keyRoutes({ keys: deps.keys, limits }));
  registerDocs(app);
  return app;
};
