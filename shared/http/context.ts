import type { Context } from 'hono';
import { UnauthorizedError } from '../domain/errors.js';
import type { Principal } from '../keys/keys.js';
import type { MemoryAccount } from '../state/memory-pool.js';

/** Per-request values shared by the middleware, the handlers and the error handler. */
export interface AppVariables {
  requestId: string;
  /** Set by the auth middleware; absent on public routes. */
  principal: Principal | undefined;
  /** Set by the error handler, for the request log. */
  errorCode: string | undefined;
  /** An unexpected error (500 ErrInternal), kept for the request log only. */
  internalError: unknown;
  /** The request's share of the process's memory (memory-scope.ts); absent: not counted. */
  memory: MemoryAccount | undefined;
}

export interface AppEnv {
  Variables: AppVariables;
}

/** The caller of an authenticated route (the auth middleware ran before the handler). */
export const principalOf = (c: Context<AppEnv>): Principal => {
  const principal = c.get('principal');
  if (!principal) throw new UnauthorizedError();
  return principal;
};
