import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import {
  createHarness,
  events,
  type Harness,
  type ProblemBody,
  ROOT_KEY,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

/**
 * Every integer query parameter of the API (read from the OpenAPI document, so a new one is
 * covered the day it is added) takes canonical decimal integers only: the spellings
 * JavaScript's Number() also reads are 400 ErrInvalidInput, not the number they look like
 * (shared/http/query-int.ts).
 */

interface Param {
  name: string;
  in: string;
  required?: boolean;
  schema: { type?: string; minimum?: number; maximum?: number };
}
interface Doc {
  paths: Record<string, Record<string, { parameters?: Param[] }>>;
}

const COERCED = ['1e3', '1E0', '0x10', '0b1', '0o7', '+1', '-0', ' 1', '1 ', '1.0', '01', '1_0'];

const [memory] = STORE_FACTORIES;

describe('integer query parameters', () => {
  let h: Harness;
  let key: string;
  let params: Array<{ method: string; path: string; param: Param; others: Param[] }>;

  beforeAll(async () => {
    h = createHarness(memory ?? expect.fail('no memory stores'), {
      ledger: { signing: new KeyRing(new FakeSigner('query-int')) },
    });
    key = await h.newKey('acme', ['read', 'write', 'admin']);
    expect((await h.append(key, 'run-1', events(3))).status).toBe(201);
    const doc = await readJson<Doc>(h.request('/v1/openapi.json'));
    params = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) => {
        const query = (op.parameters ?? []).filter((p) => p.in === 'query');
        return query
          .filter((p) => p.schema.type === 'integer' || p.schema.type === 'number')
          .map((param) => ({ method, path, param, others: query.filter((q) => q !== param) }));
      }),
    );
    // No test below may pass for want of parameters.
    expect(params.length).toBeGreaterThanOrEqual(11);
  });
  afterAll(() => h.close());

  /** The request with `value` for the parameter, canonical values for the other required ones. */
  const send = (
    target: { method: string; path: string; param: Param; others: Param[] },
    value: string,
  ) => {
    const path = target.path.replace('{streamId}', 'run-1').replace(/\{\w+\}/g, 'x');
    const search = new URLSearchParams({ [target.param.name]: value });
    for (const other of target.others) {
      if (other.required) search.set(other.name, String(other.schema.minimum ?? 1));
    }
    return h.request(`${path}?${search}`, { key: target.method === 'get' ? key : ROOT_KEY });
  };

  it('finds the integer parameters of every read route in the document', () => {
    const names = new Set(params.map((p) => `${p.path} ${p.param.name}`));
    for (const expected of [
      '/v1/streams/{streamId}/events from',
      '/v1/streams/{streamId}/events limit',
      '/v1/streams/{streamId}/state at',
      '/v1/streams/{streamId}/checkpoints before',
      '/v1/streams/{streamId}/checkpoints limit',
      '/v1/streams/{streamId}/effects limit',
      '/v1/streams limit',
      '/v1/streams/{streamId}/proofs/inclusion seq',
      '/v1/streams/{streamId}/proofs/inclusion treeSize',
      '/v1/streams/{streamId}/proofs/consistency from',
      '/v1/streams/{streamId}/proofs/consistency to',
    ]) {
      expect(names).toContain(expected);
    }
  });

  it.each(COERCED)(
    'refuses %j for every integer query parameter (400 ErrInvalidInput)',
    async (value) => {
      for (const target of params) {
        const res = await send(target, value);
        const where = `${target.method} ${target.path} ?${target.param.name}=${value}`;
        expect(res.status, where).toBe(400);
        const problem = await readJson<ProblemBody>(res);
        expect(problem.code, where).toBe('ErrInvalidInput');
        expect(problem.issues[0], where).toMatchObject({ in: 'query', path: target.param.name });
      }
    },
  );

  it('accepts the canonical spelling of the same values', async () => {
    for (const target of params) {
      const value = String(Math.max(1, target.param.schema.minimum ?? 1));
      const res = await send(target, value);
      const where = `${target.method} ${target.path} ?${target.param.name}=${value}`;
      if (res.status === 400) {
        expect((await readJson<ProblemBody>(res)).issues ?? [], where).toEqual([]);
      }
    }
    const page = await readJson<{ events: Array<{ seq: number }> }>(
      h.request('/v1/streams/run-1/events?from=2&limit=1', { key }),
    );
    expect(page.events.map((e) => e.seq)).toEqual([2]);
  });

  it('refuses values past the bounds and past 2^53 - 1', async () => {
    for (const value of ['1001', '99999999999999999999', '9007199254740992']) {
      const res = await h.request(`/v1/streams/run-1/events?limit=${value}`, { key });
      expect(res.status, value).toBe(400);
    }
    const seq = await h.request('/v1/streams/run-1/proofs/inclusion?seq=9007199254740992', { key });
    expect(seq.status).toBe(400);
  });
});
