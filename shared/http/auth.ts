import type { MiddlewareHandler } from 'hono';
import { ForbiddenError, UnauthorizedError } from '../domain/errors.js';
import type { KeyService, Scope } from '../keys/keys.js';
import type { AppEnv } from './context.js';

export interface AuthOptions {
  keys: KeyService;
  /** The scope the route needs; none: any valid key (e.g. a key asking who it is). */
  scope?: Scope;
  /** Why the route needs it, told to a caller whose key lacks it. */
  why?: string;
}

/** Keys are short; anything longer is refused before it is hashed. */
const MAX_TOKEN_LENGTH = 512;
const BEARER = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

const bearerToken = (header: string | undefined): string => {
  const token = header === undefined ? undefined : BEARER.exec(header)?.[1];
  if (token === undefined || token.length > MAX_TOKEN_LENGTH) throw new UnauthorizedError();
  return token;
};

/**
 * Authenticates `Authorization: Bearer <key>` and checks one scope: 401 ErrUnauthorized for
 * a missing, malformed, unknown or revoked key, 403 ErrForbidden for a key without the scope.
 * The principal it sets is the only source of the tenant for the rest of the request.
 */
export const requireKey = ({ keys, scope, why }: AuthOptions): MiddlewareHandler<AppEnv> =>
  async function requireKey(c, next) {
    const principal = await keys.authenticate(bearerToken(c.req.header('authorization')));
    if (scope !== undefined && !principal.scopes.includes(scope)) {
      throw new ForbiddenError(`this key lacks the ${scope} scope${why ? ` (${why})` : ''}`);
    }
    c.set('principal', principal);
    await next();
  };
