import { OpenAPIHono } from '@hono/zod-openapi';
import { requestId } from 'hono/request-id';
import type { Logger } from 'pino';
import type { Compactor } from '../compaction/compactor.js';
import { DEFAULT_LIMITS, type HttpLimits } from '../domain/limits.js';
import type { KeyService } from '../keys/keys.js';
import type { Ledger } from '../ledger/ledger.js';
import type { Clock } from '../ports/clock.js';
import { allowedMethodsOf } from './allowed-methods.js';
import type { AppEnv } from './context.js';
import { memoryScope } from './memory-scope.js';
import { notFoundHandler, problemHandler } from './problem.js';
import { requestLog } from './request-log.js';
import { adminRoutes } from './routes/admin.js';
import { checkpointRoutes } from './routes/checkpoints.js';
import { chunkRoutes } from './routes/chunks.js';
import { registerConsole } from './routes/console.js';
import { copyThreadRoutes } from './routes/copy-thread.js';
import { registerDocs } from './routes/docs.js';
import { effectListRoutes } from './routes/effect-list.js';
import { effectRoutes } from './routes/effects.js';
import { historyRoutes } from './routes/history.js';
import { keyRoutes } from './routes/keys.js';
import { proofRoutes } from './routes/proofs.js';
import { retentionRoutes } from './routes/retention.js';
import { registerRoot } from './routes/root.js';
import { stateRoutes } from './routes/state.js';
import { streamDeleteRoutes } from './routes/stream-delete.js';
import { streamListRoutes } from './routes/stream-list.js';
import { streamRoutes } from './routes/streams.js';
import { tupleRoutes } from './routes/tuple.js';
import { noStaticAssets, type StaticAssets } from './static-assets.js';
import { validationHook } from './validation.js';

export interface AppDeps {
  ledger: Ledger;
  keys: KeyService;
  logger: Logger;
  clock: Clock;
  /** Defaults: DEFAULT_LIMITS. */
  limits?: Partial<HttpLimits>;
  /** The server's compactor, for `POST /v1/admin/compact`; without it that route is absent. */
  compactor?: Compactor;
  /** The console's and the docs' built files (static-assets.ts); without them both are 404. */
  assets?: StaticAssets;
}

/**
 * The HTTP API, one app for both ways to serve it (node server and Lambda). Every request:
 * request id -> request log -> route (auth, body guard, schema validation) -> handler ->
 * service. Every error leaves through the problem handler; a request no route matches is 405
 * (with Allow) when its path is served under other methods, else 404.
 */
export const createApp = (deps: AppDeps): OpenAPIHono<AppEnv> => {
  const limits: HttpLimits = { ...DEFAULT_LIMITS, ...deps.limits };
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  app.use('*', requestId(), requestLog({ logger: deps.logger, clock: deps.clock }));
  const { memory } = deps.ledger.states;
  if (memory) app.use('/v1/*', memoryScope(memory));
  app.onError(problemHandler);
  app.notFound(notFoundHandler(allowedMethodsOf(() => app.routes)));

  app.route('/v1', streamRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', stateRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', historyRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', checkpointRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', tupleRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', copyThreadRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', streamListRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', streamDeleteRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', chunkRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', effectRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', retentionRoutes({ ledger: deps.ledger, keys: deps.keys, limits }));
  app.route('/v1', keyRoutes({ keys: deps.keys, limits }));
  app.route('/v1', effectListRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', proofRoutes({ ledger: deps.ledger, keys: deps.keys }));
  app.route('/v1', adminRoutes({ keys: deps.keys, compactor: deps.compactor }));
  registerRoot(app);
  registerConsole(app, deps.assets ?? noStaticAssets);
  registerDocs(app, deps.assets ?? noStaticAssets);
  return app;
};
