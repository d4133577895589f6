import fc from 'fast-check';
import { Big } from './markers.js';
import type { JsonSchema, Operation, Parameter } from './openapi.js';
import { Live, NASTY_STRINGS, type SchemaArbitraries } from './schema-arbitrary.js';
import { FUZZ_LIMITS, POOLS, RUN_STREAM } from './world.js';

/**
 * Requests generated from the operations of the OpenAPI document. Most are valid (with values
 * drawn from the seeded world, so they get past the conflict checks); the rest break one
 * thing: a path parameter, a query parameter, a header, the body's schema, its media type,
 * its JSON syntax or its size. The key varies too: every scope, another tenant, the root key,
 * a revoked key, none, malformed ones.
 */

export type Intent =
  | 'valid'
  | 'bad-path'
  | 'bad-query'
  | 'bad-header'
  | 'bad-body'
  | 'no-body'
  | 'media-type'
  | 'malformed-json'
  | 'oversized';

export interface FuzzRequest {
  op: Operation;
  intent: Intent;
  /** A key name of the world, `none`, or `header:<Authorization value>`. */
  key: string;
  /** Path parameters as sent: percent-encoded segments. */
  path: Record<string, string>;
  query: Array<[string, string | Live]>;
  headers: Record<string, string | Live>;
  body?: { json: unknown } | { text: string };
  /** Content-Type of the body; null: no header. */
  contentType?: string | null;
  [fc.toStringMethod]?: () => string;
}

export type Step = { tick: number } | FuzzRequest;

const MALFORMED_AUTH = [
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  'Bearer hk_0123456789abcdef_short',
  `Bearer ${'a'.repeat(600)}`,
  'bearer  hk_zz',
  'Bearer root-key-for-fuzz-0123456789abcdeX',
];

const keyArbitrary = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 10, arbitrary: fc.constant('acme-all') },
    { weight: 3, arbitrary: fc.constant('acme-rw') },
    { weight: 1, arbitrary: fc.constantFrom('acme-read', 'acme-write', 'acme-admin') },
    { weight: 2, arbitrary: fc.constant('globex-all') },
    { weight: 1, arbitrary: fc.constantFrom('root', 'revoked', 'none') },
    { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_AUTH).map((h) => `header:${h}`) },
  );

/** Strings that are not ids, percent-encoded as sent (never a dot segment or empty). */
const badSegment = (): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(...NASTY_STRINGS),
    fc
      .string({ minLength: 1, maxLength: 20, unit: 'grapheme' })
      .filter((s) => s !== '.' && s !== '..' && s.trim() !== '')
      .map(encodeURIComponent),
  );

const encodedFrom = (values: readonly string[], schema: fc.Arbitrary<unknown>) =>
  fc
    .oneof({ weight: 6, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: schema })
    .map((v) => (v === RUN_STREAM ? v : encodeURIComponent(String(v))));

/**
 * The stream id of one run, as sent: mostly a new valid id, often one that is no id at all,
 * so that several requests of a run meet on the same odd stream (begin, then complete).
 */
export const runStreamArbitrary = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.stringMatching(/^[a-z][a-z0-9-]{2,12}$/) },
    { weight: 1, arbitrary: badSegment() },
  );

const stringified = (a: fc.Arbitrary<unknown>) => a.map((v) => (v instanceof Live ? v : String(v)));

// The spellings Number() (z.coerce) reads as integers are among them: integer parameters take
// canonical decimal integers only (shared/http/query-int.ts).
const BAD_QUERY = [
  'abc',
  '-1',
  '0',
  '1.5',
  '',
  '1e400',
  '99999999999999999999',
  ' 7',
  '7 ',
  '0x10',
  '1e3',
  '+1',
  '01',
  '1.0',
  '0b1',
  '0o7',
  '-0',
];
const BAD_HEADERS: Record<string, string[]> = {
  'Hefesto-Fencing-Token': ['abc', '-1', '0', '1'.repeat(16), '1.5', ''],
  'Idempotency-Key': ['', 'a b', '"open', 'x'.repeat(300), 'a,b', '"a"b"'],
};

export class RequestArbitraries {
  constructor(
    readonly schemas: SchemaArbitraries,
    readonly keyIds: string[],
  ) {}

  #pathValue(p: Parameter): fc.Arbitrary<string> {
    // An empty segment is another path (no route), not a value of this parameter.
    const schema = this.schemas.valid(p.schema).filter((v) => String(v) !== '');
    if (p.name === 'streamId') return encodedFrom(POOLS.streams, schema);
    if (p.name === 'effectKey') return encodedFrom(POOLS.effectKeys, schema);
    if (p.name === 'sagaId') return encodedFrom(POOLS.sagas, schema);
    if (p.name === 'id') return encodedFrom(this.keyIds, fc.stringMatching(/^[0-9a-f]{16}$/));
    return schema.map((v) => encodeURIComponent(String(v)));
  }

  #queryValue(p: Parameter): fc.Arbitrary<string | Live> {
    const hints: Record<string, fc.Arbitrary<unknown>> = {
      from: fc.constantFrom(1, 2, 4, new Live('headSeq')),
      at: fc.constantFrom(1, 2, 3, new Live('headSeq')),
      limit: fc.constantFrom(1, 2, 1000),
      type: fc.constantFrom('observation', 'hefesto.delta'),
    };
    const fromSchema = this.schemas.valid(p.schema);
    const hint = hints[p.name];
    return stringified(hint ? fc.oneof({ weight: 3, arbitrary: hint }, fromSchema) : fromSchema);
  }

  #headerValue(p: Parameter): fc.Arbitrary<string | Live> {
    if (p.name === 'Hefesto-Fencing-Token') {
      return stringified(fc.constantFrom(new Live('leaseEpoch'), new Live('leaseEpoch'), 1, 2));
    }
    if (p.name === 'Idempotency-Key') {
      return fc.constantFrom('k-1', 'k-2', '"k-1"', 'effect:pay-1:completed');
    }
    return stringified(this.schemas.valid(p.schema));
  }

  /**
   * The parameters of `op` in one location, optional ones left out `absent` times in
   * `absent + 1` (headers more often than not: a fencing token on a stream without a lease,
   * or a reused Idempotency-Key, ends most requests at a 409 or 422).
   */
  #params(
    params: Parameter[],
    value: (p: Parameter) => fc.Arbitrary<string | Live>,
    absent = 1,
  ): fc.Arbitrary<Array<[string, string | Live]>> {
    const pair = (p: Parameter) => value(p).map((v) => [p.name, v] as [string, string | Live]);
    return fc
      .tuple(
        ...params.map((p) =>
          p.required
            ? pair(p)
            : fc.oneof(
                { weight: absent, arbitrary: fc.constant(undefined) },
                { weight: 1, arbitrary: pair(p) },
              ),
        ),
      )
      .map((pairs) => pairs.filter((x): x is [string, string | Live] => x !== undefined));
  }

  /** One parameter of `params` replaced by a bad value. */
  #breakOne(
    pairs: Array<[string, string | Live]>,
    params: Parameter[],
    bad: (p: Parameter) => fc.Arbitrary<string>,
  ): fc.Arbitrary<Array<[string, string | Live]>> {
    return fc
      .constantFrom(...params)
      .chain((p) =>
        bad(p).map((v) => [
          ...pairs.filter(([n]) => n !== p.name),
          [p.name, v] as [string, string],
        ]),
      );
  }

  readonly #byOperation = new Map<string, fc.Arbitrary<FuzzRequest>>();

  /** The requests of one operation (built once: building parses every pattern). */
  request(operation: Operation): fc.Arbitrary<FuzzRequest> {
    let arbitrary = this.#byOperation.get(operation.id);
    if (!arbitrary) {
      arbitrary = this.#build(operation);
      this.#byOperation.set(operation.id, arbitrary);
    }
    return arbitrary;
  }

  #build(operation: Operation): fc.Arbitrary<FuzzRequest> {
    const params = operation.op.parameters ?? [];
    const inPath = params.filter((p) => p.in === 'path');
    const inQuery = params.filter((p) => p.in === 'query');
    const inHeader = params.filter((p) => p.in === 'header');
    const bodySchema = operation.op.requestBody?.content['application/json']?.schema;
    const intents: Array<{ weight: number; arbitrary: fc.Arbitrary<Intent> }> = [
      { weight: 20, arbitrary: fc.constant('valid') },
    ];
    const add = (weight: number, intent: Intent) =>
      intents.push({ weight, arbitrary: fc.constant(intent) });
    if (inPath.length > 0) add(3, 'bad-path');
    if (inQuery.length > 0) add(2, 'bad-query');
    if (inHeader.length > 0) add(2, 'bad-header');
    if (bodySchema) {
      add(4, 'bad-body');
      add(1, 'no-body');
      add(1, 'media-type');
      add(1, 'malformed-json');
      add(1, 'oversized');
    }
    return fc
      .record({
        intent: fc.oneof(...intents),
        key: keyArbitrary(),
        path: this.#params(inPath, (p) => this.#pathValue(p)),
        query: this.#params(inQuery, (p) => this.#queryValue(p)),
        headers: this.#params(inHeader, (p) => this.#headerValue(p), 2),
        body: bodySchema ? this.schemas.valid(bodySchema) : fc.constant(undefined),
      })
      .chain((r) => this.#apply(operation, r, { inPath, inQuery, inHeader }, bodySchema));
  }

  #apply(
    op: Operation,
    r: {
      intent: Intent;
      key: string;
      path: Array<[string, string | Live]>;
      query: Array<[string, string | Live]>;
      headers: Array<[string, string | Live]>;
      body: unknown;
    },
    params: { inPath: Parameter[]; inQuery: Parameter[]; inHeader: Parameter[] },
    bodySchema: JsonSchema | undefined,
  ): fc.Arbitrary<FuzzRequest> {
    const base = (parts: Partial<FuzzRequest> & { pathPairs?: typeof r.path }): FuzzRequest => ({
      [fc.toStringMethod]() {
        return describeRequest(this);
      },
      op,
      intent: r.intent,
      key: r.key,
      path: Object.fromEntries(parts.pathPairs ?? r.path) as Record<string, string>,
      query: parts.query ?? r.query,
      headers: parts.headers ?? Object.fromEntries(r.headers),
      ...(bodySchema
        ? { body: 'body' in parts ? parts.body : { json: r.body }, contentType: parts.contentType }
        : {}),
    });
    switch (r.intent) {
      case 'bad-path':
        return this.#breakOne(r.path, params.inPath, badSegment).map((pathPairs) =>
          base({ pathPairs }),
        );
      case 'bad-query':
        return this.#breakOne(r.query, params.inQuery, () =>
          fc.constantFrom(...BAD_QUERY, ...NASTY_STRINGS.map(decodeURIComponent)),
        ).map((query) => base({ query }));
      case 'bad-header':
        return this.#breakOne(r.headers, params.inHeader, (p) =>
          fc.constantFrom(...(BAD_HEADERS[p.name] ?? ['\u00ff'])),
        ).map((pairs) => base({ headers: Object.fromEntries(pairs) }));
      case 'bad-body':
        return this.schemas
          .invalid(bodySchema as JsonSchema)
          .map((json) => base({ body: { json } }));
      case 'no-body':
        return fc
          .constantFrom<string | null>('application/json', null)
          .map((contentType) => base({ body: undefined, contentType }));
      case 'media-type':
        return fc
          .constantFrom<string | null>(
            null,
            'text/plain',
            'application/jsonx',
            'multipart/form-data',
          )
          .map((contentType) => base({ contentType }));
      case 'malformed-json':
        return fc
          .constantFrom('{', '{"a":', '[', 'nul', '{"events":[}', '\u0000', '', '{"a":1}}')
          .map((text) => base({ body: { text } }));
      case 'oversized':
        return fc.constant(
          base({
            body: { json: { ...(r.body as object), pad: new Big(FUZZ_LIMITS.maxBodyBytes) } },
          }),
        );
      default:
        return fc.constant(base({}));
    }
  }
}

/** A request in one line, for fast-check's counterexamples. */
export const describeRequest = (r: FuzzRequest): string =>
  JSON.stringify({
    op: r.op.id,
    intent: r.intent,
    key: r.key,
    path: r.path,
    query: r.query,
    headers: r.headers,
    body: r.body,
    contentType: r.contentType,
  });
