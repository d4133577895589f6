import { readFileSync } from 'node:fs';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import {
  ConflictError,
  CrashInjectedError,
  PUBLIC_ERROR_CODES,
  SeqConflictError,
} from '../../shared/domain/errors.js';
import type { AppEnv } from '../../shared/http/context.js';
import { problemHandler } from '../../shared/http/problem.js';
import { STATUS_BY_CODE } from '../../shared/http/status-table.js';
import { createHarness, STORE_FACTORIES } from './harness.js';

// One public list of error codes (shared/domain/errors.ts PUBLIC_ERROR_CODES): what the status
// table maps, what the OpenAPI document and the README show, and nothing internal.
const INTERNAL = ['ErrConflict', 'ErrCrashInjected'];

const appThrowing = (err: unknown) => {
  const app = new Hono<AppEnv>();
  app.get('/x', () => {
    throw err;
  });
  app.onError(problemHandler);
  return app;
};

describe('public error codes', () => {
  it('the status table maps exactly the public codes, none internal', () => {
    expect(Object.keys(STATUS_BY_CODE).sort()).toEqual([...PUBLIC_ERROR_CODES].sort());
    for (const code of INTERNAL) expect(PUBLIC_ERROR_CODES).not.toContain(code);
  });

  it.each([
    ['a ConflictError that escapes the services', new ConflictError('lost', undefined, 2)],
    ['a test crash hook', new CrashInjectedError('after-segment')],
  ])('answers %s as 500 ErrInternal, never its internal code', async (_what, err) => {
    const res = await appThrowing(err).request('/x');
    expect(res.status).toBe(500);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe('ErrInternal');
    expect(JSON.stringify(body)).not.toMatch(/ErrConflict|ErrCrashInjected|after-segment|lost/);
  });

  it('answers a public code as itself (the table still applies)', async () => {
    const res = await appThrowing(new SeqConflictError(6, 7)).request('/x');
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: string }).code).toBe('ErrSeqConflict');
  });

  it('the OpenAPI document has an example for every public code and none other', async () => {
    const h = createHarness(STORE_FACTORIES[0] as (typeof STORE_FACTORIES)[0]);
    try {
      const doc = (await (await h.request('/v1/openapi.json')).json()) as {
        components: { examples: Record<string, unknown> };
      };
      const codes = Object.keys(doc.components.examples).filter((k) => /^Err[A-Z]/.test(k));
      expect(codes.sort()).toEqual([...PUBLIC_ERROR_CODES].sort());
    } finally {
      h.close();
    }
  });

  it("the README's error table names every public code with its status", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const rows = readme.split('\n').filter((l) => /^\| \d{3}( \/ \d{3})? +\|/.test(l));
    const named = new Map<string, string>();
    for (const row of rows) {
      const statuses = (row.match(/^\| ([\d /]+)\|/) as RegExpMatchArray)[1] as string;
      for (const [, code] of row.matchAll(/`(Err[A-Za-z]+)`/g)) named.set(code as string, statuses);
    }
    for (const code of PUBLIC_ERROR_CODES) {
      const status = String(STATUS_BY_CODE[code]);
      expect([code, named.get(code)?.includes(status)]).toEqual([code, true]);
    }
    for (const code of INTERNAL) expect(named.has(code)).toBe(false);
  });
});
