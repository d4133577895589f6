import fc from 'fast-check';
import type { JsonValue } from '../../shared/domain/canonical.js';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import type { Chunk, ChunkSource } from '../../shared/domain/state-v2/index.js';
import { escapeSegment } from '../../shared/domain/state-v2/pointer.js';

/**
 * Random states and op sequences for the state v2 property tests: keys that are hard for
 * pointers and JCS, numbers in the forms RFC 8785 formats specially, and containers on both
 * sides of the leaf threshold, with arrays and objects large enough for several page levels.
 */

export const keyArb = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 6 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '~',
      '/',
      'a/b',
      '~1',
      '~01',
      '-',
      '0',
      '01',
      'length',
      'constructor',
      'toString',
      'prototype',
      'é',
      'e\u0301',
      '東京',
      '🙂',
      '\u0000',
      '"',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 5 }) },
);

const numberArb = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e21, 1e-7, 5e-324, 2 ** 53, -(2 ** 53), 0.1, 1e300, 123.456),
);

const scalarArb: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 3, arbitrary: numberArb },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.nat(2500).map((n) => `long:${'x'.repeat(n)}`) },
);

/** Many items or members at once: crosses the threshold and builds page levels. */
const bulkArb: fc.Arbitrary<JsonValue> = fc.oneof(
  fc
    .tuple(fc.nat(200), fc.nat(1000))
    .map(([n, seed]) => Array.from({ length: n }, (_, i) => (i * seed) % 97)),
  fc
    .tuple(fc.nat(1500), fc.nat(9))
    .map(([n, seed]) => Array.from({ length: n }, (_, i) => ({ i, s: seed }))),
  fc
    .tuple(fc.nat(400), fc.nat(1000))
    .map(([n, seed]) =>
      Object.fromEntries(
        Array.from({ length: n }, (_, i) => [`k${(i * 7919 + seed) % 100_000}`, i]),
      ),
    ),
);

const jsonArb = (bulkWeight: number): fc.Arbitrary<JsonValue> =>
  fc.letrec<{ value: JsonValue }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 6, arbitrary: scalarArb },
      { weight: 2, arbitrary: fc.array(tie('value'), { maxLength: 8 }) },
      {
        weight: 2,
        arbitrary: fc
          .array(fc.tuple(keyArb, tie('value')), { maxLength: 8 })
          .map((kvs) => Object.fromEntries(kvs) as JsonValue),
      },
      { weight: bulkWeight, arbitrary: bulkArb },
    ),
  })).value;

/** Values of states: now and then a bulk container. */
export const valueArb = jsonArb(1);

export const stateArb: fc.Arbitrary<JsonObject> = fc
  .array(fc.tuple(keyArb, valueArb), { maxLength: 6 })
  .map((kvs) => Object.fromEntries(kvs) as JsonObject);

/** An op chosen against the state it will apply to: where to go, what to do, with what. */
export interface Choice {
  walk: number[];
  kind: number;
  pick: number;
  key: string;
  value: JsonValue;
}

export const choiceArb: fc.Arbitrary<Choice> = fc.record({
  walk: fc.array(fc.nat(), { maxLength: 4 }),
  kind: fc.nat(39),
  pick: fc.nat(),
  key: keyArb,
  value: fc.oneof({ weight: 9, arbitrary: jsonArb(0) }, { weight: 1, arbitrary: bulkArb }),
});

const isContainer = (v: unknown): v is JsonValue[] | JsonObject =>
  typeof v === 'object' && v !== null;

/** Turns a choice into an op on `state`: mostly valid ones, some that v1 refuses. */
export const opFor = (state: JsonObject, c: Choice): DeltaOp => {
  let at: JsonValue[] | JsonObject = state;
  let path = '';
  for (const w of c.walk) {
    const entries = (
      Array.isArray(at) ? at.map((v, i) => [String(i), v] as const) : Object.entries(at)
    ).filter(([, v]) => isContainer(v));
    const next = entries[w % Math.max(1, entries.length)];
    if (next === undefined) break;
    at = next[1] as JsonValue[] | JsonObject;
    path += `/${escapeSegment(next[0])}`;
  }
  const keys = Array.isArray(at) ? at.map((_, i) => String(i)) : Object.keys(at);
  const existing = keys.length > 0 ? (keys[c.pick % keys.length] as string) : undefined;
  const length = Array.isArray(at) ? at.length : 0;
  const set = (segment: string): DeltaOp => ({
    op: 'set',
    path: `${path}/${segment}`,
    value: c.value,
  });
  // Mostly valid ops (replace, add, delete), and one in eight of the kinds v1 refuses.
  if (c.kind < 12) {
    return existing === undefined
      ? set(Array.isArray(at) ? '-' : escapeSegment(c.key))
      : set(escapeSegment(existing));
  }
  if (c.kind < 22)
    return set(Array.isArray(at) ? (c.pick % 2 ? '-' : String(length)) : escapeSegment(c.key));
  if (c.kind < 34) {
    return { op: 'delete', path: `${path}/${escapeSegment(existing ?? c.key)}` };
  }
  const odd = ['-', '01', '', 'length', '__proto__'][c.pick % 5] as string;
  switch (c.kind) {
    case 34:
      return { op: 'set', path: `${path}/${escapeSegment(c.key)}/deeper`, value: c.value };
    case 35:
      return set(String(length + 1 + (c.pick % 3)));
    case 36:
      return { op: 'delete', path: `${path}/${odd}` };
    case 37:
      return { op: 'set', path: `${path}/${odd}/x`, value: 1 };
    case 38:
      return { op: 'set', path: c.key, value: c.value };
    default:
      return { op: 'set', path: `${path}/__proto__`, value: c.value };
  }
};

/**
 * Ops for one delta: each chosen against the state the ones before it leave (on a v1
 * model), ending at the first op v1 refuses, if any.
 */
export const deltaFor = (state: JsonObject, choices: Choice[]): DeltaOp[] => {
  const work = structuredClone(state);
  const ops: DeltaOp[] = [];
  for (const c of choices) {
    const op = opFor(work, c);
    ops.push(op);
    try {
      applyOps(work, [op]);
    } catch {
      break;
    }
  }
  return ops;
};

/** Chunks in a map, with a count of the reads, standing in for a tenant's chunk objects. */
export const chunkStore = () => {
  const chunks = new Map<string, Uint8Array>();
  const reads: string[] = [];
  const source: ChunkSource = async (hash) => {
    reads.push(hash);
    return chunks.get(hash);
  };
  const put = (list: Chunk[]) => {
    for (const c of list) chunks.set(c.hash, c.bytes);
  };
  return { chunks, reads, source, put };
};
