import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../shared/http/app.js';
import { STREAM_ID_PATTERN } from '../../shared/http/schemas.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Clock } from '../../shared/ports/clock.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import type { RecordStore } from '../../shared/ports/record-store.js';
import { type ProblemBody, ROOT_KEY, readJson, STORE_FACTORIES, T0 } from './harness.js';

/**
 * Every path parameter of every route, as the OpenAPI document declares them: each must be
 * validated by a pattern (stream ids by the one stream-id schema), and each must refuse ids
 * that would reach into the storage layout (`/`, spaces, `#`) with 400 ErrInvalidInput before
 * anything is written. Walking the document means a new route is covered the day it is added.
 */

interface Operation {
  parameters?: Array<{ name: string; in: string; schema?: { pattern?: string } }>;
  requestBody?: unknown;
}
type OpenApi = { paths: Record<string, Record<string, Operation>> };

/** A valid value for each path parameter the API has; a new one must be added here. */
const VALID: Record<string, string> = {
  streamId: 'run-1',
  effectKey: 'pay-1',
  sagaId: 'order-1',
  id: '0123456789abcdef',
  file: 'index-0123abcd.js',
  label: '1ef4f797-8335-6428-8001-8a1503f9b875',
  hash: '1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327',
};

const POISON = ['a%2Fb', 'a%20b', 'x%23s%23y'];

/** Object keys (`t/{tenant}/s/{stream}/...`) and record keys (`t#{tenant}#s#...`). */
const LAYOUT = /t\/[^ ]*\/s\/|\/seg\/|\/snap\/|t#|#s#|#idem#/;

/** Counts every call that could change storage. */
const countWrites = <T extends object>(store: T, methods: string[], counter: { n: number }): T =>
  new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const bound = value.bind(target);
      return methods.includes(String(prop))
        ? (...args: unknown[]) => {
            counter.n++;
            return bound(...args);
          }
        : bound;
    },
  });

describe.each(STORE_FACTORIES)('path parameters on $name stores', (factory) => {
  const writes = { n: 0 };
  let app: ReturnType<typeof createApp>;
  let close: () => void;
  let key: string;

  beforeEach(async () => {
    const clock: Clock = { now: () => T0 };
    const stores = factory.create(clock);
    close = stores.close;
    const objects = countWrites<ObjectStore>(
      stores.objects,
      ['putIfAbsent', 'putIfMatch', 'delete'],
      writes,
    );
    const records = countWrites<RecordStore>(
      stores.records,
      ['put', 'update', 'delete', 'transact'],
      writes,
    );
    const ledger = new Ledger({ objects, records, clock });
    const keys = new KeyService({ records, clock, rootKey: ROOT_KEY });
    const logger = pino({ level: 'silent' });
    app = createApp({ ledger, keys, logger, clock });
    const created = await app.request('/v1/keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${ROOT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'acme', scopes: ['read', 'write', 'admin'] }),
    });
    key = ((await created.json()) as { key: string }).key;
  });
  afterEach(() => close());

  const document = async () => readJson<OpenApi>(app.request('/v1/openapi.json'));

  const operations = async () =>
    Object.entries((await document()).paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({
        path,
        method,
        op,
        params: (op.parameters ?? []).filter((p) => p.in === 'path'),
      })),
    );

  it('declares every path parameter with a validating pattern, stream ids with the one schema', async () => {
    const ops = await operations();
    const declared = ops.flatMap((o) =>
      o.params.map((p) => ({ ...p, at: `${o.method} ${o.path}` })),
    );
    // Every {name} in a path is a declared parameter (an undeclared one is not validated).
    for (const o of ops) {
      const inPath = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(o.params.map((p) => p.name).sort(), `${o.method} ${o.path}`).toEqual(inPath.sort());
    }
    expect(declared.length).toBeGreaterThan(20);
    for (const p of declared) {
      expect(VALID, `${p.at}: a valid value for {${p.name}}`).toHaveProperty(p.name);
      expect(p.schema?.pattern, `${p.at}: {${p.name}} has no pattern`).toBeDefined();
      if (/stream/i.test(p.name)) expect(p.schema?.pattern, p.at).toBe(STREAM_ID_PATTERN.source);
    }
  });

  it('refuses a%2Fb, a%20b and x%23s%23y in every path parameter with 400, writing nothing', async () => {
    let checked = 0;
    for (const { path, method, op, params } of await operations()) {
      for (const target of params) {
        // Stream ids name storage paths: all three must be refused. Other ids (effect keys
        // may hold `/`) must refuse whichever of them their own pattern excludes.
        const pattern = new RegExp(target.schema?.pattern ?? '');
        const poisons = /stream/i.test(target.name)
          ? POISON
          : POISON.filter((p) => !pattern.test(decodeURIComponent(p)));
        expect(poisons.length, target.name).toBeGreaterThan(0);
        for (const poison of poisons) {
          const url = path.replace(/\{(\w+)\}/g, (_, name: string) =>
            name === target.name ? poison : encodeURIComponent(VALID[name] ?? 'x'),
          );
          const headers: Record<string, string> = { authorization: `Bearer ${key}` };
          if (op.requestBody) headers['content-type'] = 'application/json';
          writes.n = 0;
          const res = await app.request(url, {
            method: method.toUpperCase(),
            headers,
            body: op.requestBody ? '{}' : undefined,
          });
          const at = `${method.toUpperCase()} ${url}`;
          expect(res.status, at).toBe(400);
          const problem = await readJson<ProblemBody>(res);
          expect(problem.code, at).toBe('ErrInvalidInput');
          expect(problem.issues[0], at).toMatchObject({ in: 'path', path: target.name });
          expect(problem.detail, at).not.toMatch(LAYOUT);
          expect(JSON.stringify(problem), at).not.toMatch(LAYOUT);
          expect(writes.n, `${at} wrote`).toBe(0);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('refuses an effect and a saga on a bad stream id even with valid bodies, writing nothing', async () => {
    const post = (url: string, body?: unknown) =>
      app.request(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    for (const stream of POISON) {
      writes.n = 0;
      const base = `/v1/streams/${stream}`;
      const begun = await post(`${base}/effects/pay-1/begin`, { kind: 'payment', intent: 1 });
      const done = await post(`${base}/effects/pay-1/complete`, { holder: 'h-1', result: 1 });
      const failed = await post(`${base}/effects/pay-1/fail`, { holder: 'h-1', error: 1 });
      const saga = await post(`${base}/sagas/order-1/compensate`);
      for (const res of [begun, done, failed, saga]) {
        expect(res.status, stream).toBe(400);
        const text = await res.text();
        expect(text, stream).toContain('"in":"path","path":"streamId"');
        expect(text, stream).not.toMatch(LAYOUT);
      }
      expect(writes.n, stream).toBe(0);
    }
  });
});
