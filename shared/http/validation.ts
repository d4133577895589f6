import type { OpenAPIHonoOptions } from '@hono/zod-openapi';
import { InvalidInputError } from '../domain/errors.js';
import type { AppEnv } from './context.js';

/** Why a request failed schema validation: carried as the `cause` of ErrInvalidInput. */
export interface RequestIssues {
  issues: Array<{ in: string; path: string; message: string }>;
}

const LOCATIONS: Record<string, string> = {
  json: 'body',
  param: 'path',
  query: 'query',
  header: 'header',
};

export const isRequestIssues = (value: unknown): value is RequestIssues =>
  typeof value === 'object' && value !== null && Array.isArray((value as RequestIssues).issues);

/** The app's default hook: any schema failure becomes 400 ErrInvalidInput with its issues. */
export const validationHook: NonNullable<OpenAPIHonoOptions<AppEnv>['defaultHook']> = (result) => {
  if (result.success) return;
  const where = LOCATIONS[result.target] ?? result.target;
  const issues = result.error.issues.map((issue) => ({
    in: where,
    path: issue.path.map(String).join('.'),
    message: issue.message,
  }));
  const first = issues[0];
  const summary = first ? `${first.path || where}: ${first.message}` : 'invalid request';
  throw new InvalidInputError(`invalid ${where}: ${summary}`, {
    cause: { issues } satisfies RequestIssues,
  });
};
