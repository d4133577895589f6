import fc from 'fast-check';
import { type JsonSchema, type OpenApiDocument, resolve } from './openapi.js';

/**
 * fast-check arbitraries from the JSON Schemas of the OpenAPI document: `valid` values that
 * the schema accepts and `invalid` ones that break it in one place. Both take hints: values
 * a property of that name should often have (ids of seeded streams, the live state digest),
 * because values drawn from the schema alone rarely get past a conflict check.
 *
 * Only the subset of JSON Schema that zod-to-openapi emits for this API is covered; anything
 * else fails loudly so a new construct cannot be silently skipped.
 */

/** A value to fill in when the request is sent (it depends on what is stored by then). */
export class Live {
  constructor(readonly name: string) {}
}

export type Hints = Record<string, fc.Arbitrary<unknown>>;

const typesOf = (schema: JsonSchema): string[] =>
  schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];

/** Any JSON value, small. */
export const anyJson = (): fc.Arbitrary<unknown> =>
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);

const stringOf = (schema: JsonSchema): fc.Arbitrary<string> => {
  if (schema.format === 'date-time') {
    return fc
      .date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true })
      .map((d) => d.toISOString());
  }
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? Number.POSITIVE_INFINITY;
  if (schema.pattern !== undefined) {
    // Patterns here bound the length themselves; the filter only trims the rare outlier.
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((s) => s.length >= min && s.length <= max);
  }
  return fc.string({ minLength: min, maxLength: Math.min(max, min + 24) });
};

const integerOf = (schema: JsonSchema): fc.Arbitrary<number> => {
  const min = schema.minimum ?? -1000;
  const max = schema.maximum ?? Math.max(min + 1000, 1000);
  // Small values most of the time, the bounds themselves often.
  return fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min, max: Math.min(max, min + 100) }) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
    { weight: 1, arbitrary: fc.integer({ min, max }) },
  );
};

export class SchemaArbitraries {
  constructor(
    readonly doc: OpenApiDocument,
    readonly hints: Hints = {},
  ) {}

  /** A value `schema` accepts (refinements the document cannot express aside). */
  valid(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
    const s = resolve(this.doc, schema);
    if (s.const !== undefined) return fc.constant(s.const);
    if (s.enum) return fc.constantFrom(...s.enum);
    if (s.oneOf ?? s.anyOf) {
      return fc.oneof(...(s.oneOf ?? s.anyOf ?? []).map((b) => this.valid(b, depth)));
    }
    if (s.allOf) return this.valid(this.#merged(s.allOf), depth);
    const types = typesOf(s);
    if (types.length === 0) return depth > 3 ? fc.constant(null) : anyJson();
    return fc.oneof(...types.map((t) => this.#validOfType(t, s, depth)));
  }

  /** allOf of object schemas as one object schema (what a generator can draw from). */
  #merged(parts: JsonSchema[]): JsonSchema {
    const resolved = parts.map((p) => resolve(this.doc, p));
    if (resolved.some((p) => typesOf(p).join() !== 'object')) {
      throw new Error('allOf of anything but objects is not generated');
    }
    return {
      type: 'object',
      properties: Object.assign({}, ...resolved.map((p) => p.properties ?? {})),
      required: resolved.flatMap((p) => p.required ?? []),
      additionalProperties: !resolved.some((p) => p.additionalProperties === false),
    };
  }

  #validOfType(type: string, s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return integerOf(s);
      case 'number':
        return fc.oneof(integerOf(s), fc.double({ noNaN: true, noDefaultInfinity: true }));
      case 'string':
        return stringOf(s);
      case 'array': {
        const items = s.items ? this.valid(s.items, depth + 1) : anyJson();
        const minLength = s.minItems ?? 0;
        return fc.array(items, { minLength, maxLength: Math.min(s.maxItems ?? 4, minLength + 4) });
      }
      case 'object':
        return this.#object(s, depth);
      default:
        throw new Error(`no generator for JSON Schema type ${type}`);
    }
  }

  #object(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const props = s.properties ?? {};
    if (Object.keys(props).length === 0) {
      return fc.dictionary(fc.string({ maxLength: 8 }), anyJson(), { maxKeys: 3 });
    }
    const required = new Set(s.required ?? []);
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, prop] of Object.entries(props)) {
      const fromSchema = this.valid(prop, depth + 1);
      const hint = this.hints[name];
      model[name] = hint ? fc.oneof({ weight: 3, arbitrary: hint }, fromSchema) : fromSchema;
    }
    return fc.record(model, { requiredKeys: [...required].filter((k) => k in props) });
  }

  /**
   * A value `schema` refuses, broken in one place: a wrong type, a value out of range or off
   * its pattern, a required property left out or an unknown one added, at any depth.
   * (Mostly: a mutation the schema happens to accept is possible; callers check with the
   * validator before relying on invalidity.)
   */
  invalid(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
    const resolved = resolve(this.doc, schema);
    const s = resolved.allOf ? this.#merged(resolved.allOf) : resolved;
    const wrongType = fc.constantFrom<unknown>(null, true, 'x', 12.5, -1, [], {});
    const branches: fc.Arbitrary<unknown>[] = [wrongType];
    if (s.enum) branches.push(fc.constantFrom('not-in-enum', ''));
    if (s.oneOf ?? s.anyOf) {
      branches.push(fc.oneof(...(s.oneOf ?? s.anyOf ?? []).map((b) => this.invalid(b, depth))));
    }
    for (const type of typesOf(s)) {
      if (type === 'string') branches.push(this.#badString(s));
      if (type === 'integer' || type === 'number') branches.push(this.#badNumber(s, type));
      if (type === 'array') branches.push(this.#badArray(s, depth));
      if (type === 'object' && depth < 4) branches.push(this.#badObject(s, depth));
    }
    return fc.oneof(...branches);
  }

  #badString(s: JsonSchema): fc.Arbitrary<unknown> {
    const out: fc.Arbitrary<unknown>[] = [fc.constant(12)];
    if (s.pattern !== undefined) out.push(nastyStrings());
    if (s.maxLength !== undefined) out.push(fc.constant('a'.repeat(s.maxLength + 1)));
    if ((s.minLength ?? 0) > 0) out.push(fc.constant(''));
    if (s.format === 'date-time') out.push(fc.constant('yesterday'));
    return fc.oneof(...out);
  }

  #badNumber(s: JsonSchema, type: string): fc.Arbitrary<unknown> {
    const out: fc.Arbitrary<unknown>[] = [fc.constant('1')];
    if (type === 'integer') out.push(fc.constantFrom(0.5, 1e300));
    if (s.minimum !== undefined) out.push(fc.constant(s.minimum - 1));
    if (s.maximum !== undefined) out.push(fc.constant(s.maximum + 1));
    return fc.oneof(...out);
  }

  #badArray(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const out: fc.Arbitrary<unknown>[] = [fc.constant({ not: 'an array' })];
    if ((s.minItems ?? 0) > 0) out.push(fc.constant([]));
    if (s.items && depth < 4) out.push(this.invalid(s.items, depth + 1).map((v) => [v]));
    if (s.maxItems !== undefined && s.maxItems <= 64 && s.items) {
      const items = this.valid(s.items, depth + 1);
      out.push(fc.array(items, { minLength: s.maxItems + 1, maxLength: s.maxItems + 1 }));
    }
    return fc.oneof(...out);
  }

  #badObject(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const props = Object.entries(s.properties ?? {});
    const base = this.#object(s, depth) as fc.Arbitrary<Record<string, unknown>>;
    if (props.length === 0) return fc.constant([]);
    const names = props.map(([n]) => n);
    const out: fc.Arbitrary<unknown>[] = [];
    const required = (s.required ?? []).filter((k) => names.includes(k));
    if (required.length > 0) {
      out.push(
        fc.tuple(base, fc.constantFrom(...required)).map(([o, k]) => {
          const { [k]: _, ...rest } = o;
          return rest;
        }),
      );
    }
    if (s.additionalProperties === false) {
      out.push(base.map((o) => ({ ...o, unexpectedMember: 1 })));
    }
    out.push(
      fc
        .tuple(base, fc.constantFrom(...props))
        .chain(([o, [name, prop]]) =>
          this.invalid(prop, depth + 1).map((bad) => ({ ...o, [name]: bad })),
        ),
    );
    return fc.oneof(...out);
  }
}

/**
 * Strings that ids must refuse: separators of object keys and URLs, percent-escapes (sent
 * as they are, so the server decodes them), spaces, non-ASCII, control characters, overlong.
 */
export const NASTY_STRINGS = [
  'a%2Fb',
  'a%20b',
  'x%23s%23y',
  '%2F',
  'a%00b',
  'a%0Ab',
  '%C3%BC',
  'a%5Cb',
  'a%3Fb',
  '...',
  '-lead',
  '.lead',
  'a:b',
  'a%2F..%2Fb',
  'A'.repeat(129),
  'a'.repeat(300),
  'tenA%23s%23run-1',
] as const;

/** NASTY_STRINGS decoded (the value a handler would see). */
export const nastyStrings = (): fc.Arbitrary<string> =>
  fc.constantFrom(...NASTY_STRINGS).map((s) => decodeURIComponent(s));
