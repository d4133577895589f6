import type { MiddlewareHandler } from 'hono';
import type { MemoryPool } from '../state/memory-pool.js';
import type { AppEnv } from './context.js';

/**
 * Every API request draws on the process's memory pool through an account of its own
 * (memory-pool.ts), which the routes hand to the services that materialise states: what it
 * charges is given back when the request ends, or once the state its response streams has
 * been sent (the route retains the account until then).
 */
export const memoryScope =
  (pool: MemoryPool): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    const account = pool.open();
    c.set('memory', account);
    try {
      await next();
    } finally {
      account.end();
    }
  };
