import { InMemoryStore, type Operation } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HefestoStore } from '../../packages/langgraph/src/index.js';
import { allStores } from '../support/stores.js';
import { type StoreWorld, startStoreWorld } from './world.js';

/**
 * HefestoStore answers what LangGraph's own InMemoryStore answers: random sequences of store
 * calls (puts across namespaces of depth 1–3, deletes, gets, searches with filters, limits
 * and offsets, listNamespaces with prefix, suffix, wildcards, maxDepth, limit and offset,
 * batches mixing them, and refused namespaces) run on both, and every answer (value or
 * error message) is compared, timestamps aside. On memory, local (files + SQLite) and the
 * AWS emulators. Each run has a stream prefix of its own.
 */

const label = fc.constantFrom('a', 'b', 'c', 'user-1', 'x y', 'é');
// Mostly shallow and from few labels, so that namespaces hold several items and share prefixes.
const nsLabel = fc.constantFrom('a', 'b', 'é');
const ns = fc.oneof(
  { weight: 4, arbitrary: fc.array(nsLabel, { minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.array(nsLabel, { minLength: 2, maxLength: 2 }) },
  { weight: 1, arbitrary: fc.array(label, { minLength: 3, maxLength: 3 }) },
);
const key = fc.constantFrom('k1', 'k2', 'k3', 'a/b~c', '');
const value = fc.record({
  n: fc.integer({ min: 0, max: 5 }),
  s: fc.constantFrom('p', 'q', 'r'),
  list: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 2 }),
});
const scalar = fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constantFrom('p', 'q', 'r', '3'));
const condition = fc.oneof(
  scalar,
  fc.record(
    {
      $eq: scalar,
      $ne: scalar,
      $gt: scalar,
      $gte: scalar,
      $lt: scalar,
      $lte: scalar,
      $in: fc.array(scalar, { maxLength: 3 }),
      $nin: fc.array(scalar, { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
);
const filter = fc.option(
  fc.dictionary(fc.constantFrom('n', 's', 'list', 'missing'), condition, { maxKeys: 2 }),
  {
    nil: undefined,
  },
);
const pattern = fc.array(fc.oneof(label, fc.constant('*')), { minLength: 1, maxLength: 2 });
const small = (max: number) => fc.option(fc.integer({ min: 0, max }), { nil: undefined });

type Command =
  | { call: 'put'; ns: string[]; key: string; value: Record<string, unknown> }
  | { call: 'delete'; ns: string[]; key: string }
  | { call: 'get'; ns: string[]; key: string }
  | {
      call: 'search';
      prefix: string[];
      filter?: Record<string, unknown>;
      limit?: number;
      offset?: number;
    }
  | {
      call: 'list';
      prefix?: string[];
      suffix?: string[];
      maxDepth?: number;
      limit?: number;
      offset?: number;
    }
  | { call: 'batch'; ops: Operation[] }
  | { call: 'refused'; ns: string[] };

const putOp = fc.record({ namespace: ns, key, value });
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ call: fc.constant('put' as const), ns, key, value }) },
  { weight: 2, arbitrary: fc.record({ call: fc.constant('delete' as const), ns, key }) },
  { weight: 3, arbitrary: fc.record({ call: fc.constant('get' as const), ns, key }) },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        call: fc.constant('search' as const),
        prefix: fc.array(label, { maxLength: 2 }),
        filter,
        limit: fc.integer({ min: 1, max: 6 }),
        offset: fc.integer({ min: 0, max: 3 }),
      },
      { requiredKeys: ['call', 'prefix'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        call: fc.constant('list' as const),
        prefix: pattern,
        suffix: pattern,
        maxDepth: fc.integer({ min: 1, max: 3 }),
        limit: fc.integer({ min: 1, max: 6 }),
        offset: fc.integer({ min: 0, max: 3 }),
      },
      { requiredKeys: ['call'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.oneof(
          putOp,
          putOp.map((p) => ({ ...p, value: null })),
          fc.record({ namespace: ns, key }),
          fc.record({
            namespacePrefix: fc.array(label, { maxLength: 1 }),
            limit: small(5).map((l) => l ?? 10),
            offset: fc.constant(0),
          }),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((ops) => ({ call: 'batch' as const, ops: ops as Operation[] })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(['langgraph', 'a'], ['a.b'], ['a:b'], ['a', 'b:c'], ['a', ''], [] as string[])
      .map((n) => ({ call: 'refused' as const, ns: n })),
  },
);

type Subject = HefestoStore | InMemoryStore;

const strip = (answer: unknown): unknown => {
  if (Array.isArray(answer)) return answer.map(strip);
  if (answer && typeof answer === 'object' && 'createdAt' in answer) {
    const { createdAt: _c, updatedAt: _u, ...rest } = answer as Record<string, unknown>;
    return rest;
  }
  return answer;
};

const run = async (s: Subject, c: Command): Promise<unknown> => {
  try {
    switch (c.call) {
      case 'put':
        return await s.put(c.ns, c.key, c.value);
      case 'delete':
        return await s.delete(c.ns, c.key);
      case 'get':
        return strip(await s.get(c.ns, c.key));
      case 'search':
        return strip(
          await s.search(c.prefix, { filter: c.filter, limit: c.limit, offset: c.offset }),
        );
      case 'list':
        return await s.listNamespaces(c);
      case 'batch':
        // Each subject gets its own copy: InMemoryStore keeps the objects it is given.
        return strip(await s.batch(structuredClone(c.ops)));
      case 'refused':
        return await s.put(c.ns, 'k', { n: 1 });
    }
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
};

describe.each(allStores)('HefestoStore against InMemoryStore ($name)', (factory) => {
  let world: StoreWorld;
  let runs = 0;

  beforeAll(async () => {
    if (factory.enabled) world = await startStoreWorld(factory);
  });
  afterAll(async () => world?.close());

  it.skipIf(!factory.enabled)(
    'answers every call of a random sequence as InMemoryStore does',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(commandArb, { minLength: 1, maxLength: 30 }),
          async (commands) => {
            const ours = world.store({ prefix: `d${factory.name}${runs++}` });
            const theirs = new InMemoryStore();
            for (const [i, c] of commands.entries()) {
              const expected = await run(theirs, structuredClone(c));
              const actual = await run(ours, structuredClone(c));
              expect(actual, `command ${i}: ${JSON.stringify(c)}`).toEqual(expected);
            }
            // And a new store (another process) reads the same.
            const fresh = world.store({ prefix: `d${factory.name}${runs - 1}` });
            expect(strip(await fresh.search([], { limit: 100 }))).toEqual(
              strip(await theirs.search([], { limit: 100 })),
            );
            expect(await fresh.listNamespaces({ limit: 100 })).toEqual(
              await theirs.listNamespaces({ limit: 100 }),
            );
          },
        ),
        { numRuns: Number(process.env.STORE_RUNS) || (factory.name === 'memory' ? 40 : 12) },
      );
    },
    600_000,
  );
});
