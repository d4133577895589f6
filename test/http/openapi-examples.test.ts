import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type JsonSchema,
  type OpenApiDocument,
  type Operation,
  operationsOf,
  SchemaValidator,
} from '../support/fuzz/openapi.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from './harness.js';

/**
 * The OpenAPI document's request examples work as written: what Swagger UI's "Try it out"
 * sends (the request body's example, path and header parameters' examples) is sent to the
 * app, and the answer must be one of the operation's documented success statuses, with a
 * body valid against the schema documented for it.
 *
 * Examples follow one another as a user would try them (append, then checkpoint, then fork
 * from it, ...), each scenario on a fresh app. The only values changed are the ones a server
 * issues at run time (an effect's holder token), taken from the earlier answer that issued it.
 */

type Doc = OpenApiDocument & {
  paths: Record<string, Record<string, { parameters?: Array<{ example?: unknown }> }>>;
};

interface Step {
  /** 'POST /v1/streams/{streamId}/events' */
  op: string;
  /** Server-issued values put into the example body, from earlier answers of the scenario. */
  issued?: (answers: Map<string, unknown>) => Record<string, unknown>;
}

const holder = (answers: Map<string, unknown>) => ({
  holder: (
    answers.get('POST /v1/streams/{streamId}/effects/{effectKey}/begin') as { holder: string }
  ).holder,
});

const SCENARIOS: Record<string, Step[]> = {
  'a run: keys, append, checkpoint, its pending writes, fork, retention': [
    { op: 'POST /v1/keys' },
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'POST /v1/streams/{streamId}/checkpoints' },
    { op: 'POST /v1/streams/{streamId}/checkpoints/{label}/writes' },
    { op: 'GET /v1/streams/{streamId}/tuple' },
    { op: 'GET /v1/streams/{streamId}/channel-history' },
    { op: 'GET /v1/streams/{streamId}/tuples' },
    { op: 'POST /v1/streams/{streamId}/copy-thread' },
    { op: 'POST /v1/streams/{streamId}/fork' },
    { op: 'PUT /v1/streams/{streamId}/retention' },
  ],
  'a stream sealed at rest: its commitment key': [
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'GET /v1/streams/{streamId}/keys/commitment' },
  ],
  'an effect that completes': [
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'POST /v1/streams/{streamId}/effects/{effectKey}/begin' },
    { op: 'POST /v1/streams/{streamId}/effects/{effectKey}/complete', issued: holder },
  ],
  'an effect that fails': [
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'POST /v1/streams/{streamId}/effects/{effectKey}/begin' },
    { op: 'POST /v1/streams/{streamId}/effects/{effectKey}/fail', issued: holder },
  ],
  'a lease renewed, then drained': [
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'POST /v1/streams/{streamId}/lease' },
    { op: 'POST /v1/streams/{streamId}/lease/renew' },
    { op: 'POST /v1/streams/{streamId}/lease/drain' },
  ],
  'a session history changed, then read': [
    { op: 'POST /v1/streams/{streamId}/history' },
    { op: 'GET /v1/streams/{streamId}/history' },
  ],
  'a lease released': [
    { op: 'POST /v1/streams/{streamId}/events' },
    { op: 'POST /v1/streams/{streamId}/lease' },
    { op: 'POST /v1/streams/{streamId}/lease/release' },
  ],
};

describe('the OpenAPI request examples', () => {
  let doc: Doc;
  let validator: SchemaValidator;
  const harnesses: Harness[] = [];
  const factory = STORE_FACTORIES[0] as (typeof STORE_FACTORIES)[0];

  beforeAll(async () => {
    const h = createHarness(factory);
    doc = (await (await h.request('/v1/openapi.json')).json()) as Doc;
    h.close();
    validator = new SchemaValidator(doc);
  });

  afterEach(() => {
    for (const h of harnesses.splice(0)) h.close();
  });

  const operation = (id: string): Operation => {
    const found = operationsOf(doc).find((o) => o.id === id);
    if (!found) throw new Error(`the document has no operation ${id}`);
    return found;
  };

  /** The example of a JSON request body: on the media type, else on its schema. */
  const bodyExample = (op: Operation): unknown => {
    const media = op.op.requestBody?.content['application/json'];
    if (!media) return undefined;
    if (media.example !== undefined) return media.example;
    const ref = media.schema?.$ref?.replace('#/components/schemas/', '');
    return ref ? doc.components.schemas[ref]?.example : media.schema?.example;
  };

  /** The request "Try it out" builds from the examples of the operation's parameters. */
  const requestOf = (op: Operation) => {
    let path = op.path;
    const headers: Record<string, string> = {};
    const query = new URLSearchParams();
    for (const p of op.op.parameters ?? []) {
      const example = (p as { example?: unknown }).example ?? p.schema?.example;
      if (example === undefined) {
        if (p.in === 'path') throw new Error(`${op.id}: path parameter ${p.name} has no example`);
        continue;
      }
      if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(String(example)));
      if (p.in === 'header') headers[p.name] = String(example);
      if (p.in === 'query') query.set(p.name, String(example));
    }
    const search = query.size > 0 ? `?${query}` : '';
    return { path: `${path}${search}`, headers };
  };

  it('puts an example on every JSON request body, and the scenarios send each of them', () => {
    const withBody = operationsOf(doc)
      .filter((o) => o.op.requestBody?.content['application/json'])
      .map((o) => o.id);
    const missing = withBody.filter((id) => bodyExample(operation(id)) === undefined);
    const sent = new Set(Object.values(SCENARIOS).flatMap((steps) => steps.map((s) => s.op)));

    expect(missing).toEqual([]);
    expect(withBody.filter((id) => !sent.has(id))).toEqual([]);
  });

  for (const [scenario, steps] of Object.entries(SCENARIOS)) {
    it(`answers each example with a documented success and body: ${scenario}`, async () => {
      const h = createHarness(factory, { sealed: scenario.includes('sealed') });
      harnesses.push(h);
      const answers = new Map<string, unknown>();
      const wrong: string[] = [];
      for (const step of steps) {
        const op = operation(step.op);
        const { path, headers } = requestOf(op);
        const example = bodyExample(op) as Record<string, unknown>;
        // A GET has no body: only the examples of its parameters.
        const body =
          example === undefined && !step.issued
            ? undefined
            : { ...example, ...step.issued?.(answers) };
        const res = await h.request(path, { method: op.method, key: ROOT_KEY, headers, body });
        const text = await res.text();
        const json = text ? (JSON.parse(text) as unknown) : undefined;
        answers.set(step.op, json);
        const documented = op.op.responses[String(res.status)];
        if (res.status >= 300 || !documented) {
          wrong.push(`${step.op}: ${res.status} ${text.slice(0, 300)}`);
          continue;
        }
        const schema = documented.content?.['application/json']?.schema as JsonSchema | undefined;
        if (schema) {
          for (const e of validator.errors(schema, json)) wrong.push(`${step.op}: ${e}`);
        } else if (text !== '') {
          wrong.push(`${step.op}: ${res.status} documents no body, got ${text.slice(0, 100)}`);
        }
      }
      expect(wrong).toEqual([]);
    });
  }
});
