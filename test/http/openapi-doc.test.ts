import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { STATUS_BY_CODE } from '../../shared/http/status-table.js';
import {
  type JsonSchema,
  type OpenApiDocument,
  operationsOf,
  SchemaValidator,
} from '../support/fuzz/openapi.js';
import { createHarness, STORE_FACTORIES } from './harness.js';

/**
 * The OpenAPI document is complete enough to generate requests and check answers from
 * (test/http/fuzz.test.ts does): each error status names its codes, every example matches its
 * schema, and it says which release it describes.
 */

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

type Example = { value?: unknown; $ref?: string };

describe('the OpenAPI document', () => {
  let doc: OpenApiDocument & { components: { examples?: Record<string, Example> } };
  let validator: SchemaValidator;

  beforeAll(async () => {
    const h = createHarness(STORE_FACTORIES[0] as (typeof STORE_FACTORIES)[0]);
    doc = (await (await h.request('/v1/openapi.json')).json()) as typeof doc;
    h.close();
    validator = new SchemaValidator(doc);
  });

  const problems = () =>
    operationsOf(doc).flatMap((op) =>
      Object.entries(op.op.responses)
        .filter(([status]) => Number(status) >= 400)
        .map(([status, response]) => ({ op: op.id, status: Number(status), response })),
    );

  const exampleValue = (example: Example): unknown => {
    if (example.$ref === undefined) return example.value;
    const name = example.$ref.replace('#/components/examples/', '');
    return doc.components.examples?.[name]?.value;
  };

  it('names the release it describes: the version of package.json', () => {
    expect(doc.info.version).toBe(pkg.version);
    expect(doc.info.title).toMatch(/^Hefesto/);
    expect(doc.info.title).not.toBe('Hefesto API');
  });

  it('lists, under each error status of each operation, exactly the codes of that status', () => {
    const wrong: string[] = [];
    for (const { op, status, response } of problems()) {
      const schema = response.content?.['application/problem+json']?.schema as JsonSchema;
      const codes = schema?.allOf?.[1]?.properties?.code?.enum as string[] | undefined;
      if (!codes || codes.length === 0) wrong.push(`${op} ${status}: no code enum`);
      for (const code of codes ?? []) {
        const expected = STATUS_BY_CODE[code as keyof typeof STATUS_BY_CODE];
        if (expected !== status) wrong.push(`${op} ${status}: ${code} is ${expected}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(problems().length).toBeGreaterThan(100);
  });

  it('documents 401 and 403 on every operation behind a key, 413 and 415 on every JSON body', () => {
    const missing = operationsOf(doc).flatMap(({ id, op }) => {
      const needed = [
        // GET /v1/whoami answers any valid key: it has no scope to lack, so no 403.
        ...((op.security ?? []).length > 0
          ? ['401', ...(id === 'GET /v1/whoami' ? [] : ['403'])]
          : []),
        ...(op.requestBody ? ['400', '413', '415'] : []),
      ];
      return needed.filter((s) => !(s in op.responses)).map((s) => `${id} ${s}`);
    });
    expect(missing).toEqual([]);
  });

  it('gives an example problem per code, each valid against the response schema', () => {
    const wrong: string[] = [];
    for (const { op, status, response } of problems()) {
      const media = response.content?.['application/problem+json'];
      const codes = (media?.schema as JsonSchema)?.allOf?.[1]?.properties?.code?.enum ?? [];
      for (const code of codes as string[]) {
        const example = media?.examples?.[code] as Example | undefined;
        if (!example) {
          wrong.push(`${op} ${status}: no example of ${code}`);
          continue;
        }
        const errors = validator.errors(media?.schema as JsonSchema, exampleValue(example));
        if (errors.length > 0) wrong.push(`${op} ${status} ${code}: ${errors.join('; ')}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('has an example on every request and response schema, each valid against it', () => {
    const schemas = Object.entries(doc.components.schemas);
    const used = new Set<string>();
    for (const { op } of operationsOf(doc)) {
      for (const media of [
        ...Object.values(op.requestBody?.content ?? {}),
        ...Object.values(op.responses).flatMap((r) => Object.values(r.content ?? {})),
      ]) {
        const ref = media.schema?.$ref;
        if (ref) used.add(ref.replace('#/components/schemas/', ''));
      }
    }
    const wrong = schemas
      .filter(([name]) => used.has(name))
      .flatMap(([name, schema]) => {
        if (schema.example === undefined) return [`${name}: no example`];
        return validator.errors(schema, schema.example).map((e) => `${name}: ${e}`);
      });
    expect(wrong).toEqual([]);
    expect(used.size).toBeGreaterThan(15);
  });
});
