import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * The parts of the served OpenAPI 3.1 document the fuzz test reads, and a JSON Schema
 * (2020-12, as OpenAPI 3.1 uses) validator for the schemas in it.
 */

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  default?: unknown;
  example?: unknown;
};

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}

export interface MediaType {
  schema?: JsonSchema;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}

export interface OperationObject {
  parameters?: Parameter[];
  security?: unknown[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, { description: string; content?: Record<string, MediaType> }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, JsonSchema> };
}

export interface Operation {
  /** 'POST /v1/streams/{streamId}/events' */
  id: string;
  method: string;
  path: string;
  op: OperationObject;
}

export const operationsOf = (doc: OpenApiDocument): Operation[] =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      id: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      path,
      op,
    })),
  );

/** The JSON Schema a `$ref` into the components names, or the schema itself. */
export const resolve = (doc: OpenApiDocument, schema: JsonSchema): JsonSchema => {
  const name = schema.$ref?.replace('#/components/schemas/', '');
  if (name === undefined) return schema;
  const target = doc.components.schemas[name];
  if (!target) throw new Error(`unresolved $ref ${schema.$ref}`);
  return resolve(doc, target);
};

const COMPONENTS_ID = 'https://hefesto.test/openapi.json';

const withAbsoluteRefs = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(withAbsoluteRefs);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' && v.startsWith('#/')
        ? `${COMPONENTS_ID}${v}`
        : withAbsoluteRefs(v),
    ]),
  );
};

// ajv-formats is CommonJS: its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/** Compiles the document's schemas (components resolved) into validators, once each. */
export class SchemaValidator {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<unknown, ValidateFunction>();

  constructor(doc: OpenApiDocument) {
    // strict: false, since OpenAPI adds keywords JSON Schema does not know (`example`).
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(this.#ajv);
    this.#ajv.addSchema({ $id: COMPONENTS_ID, components: doc.components });
  }

  /** Where `value` fails `schema` (empty when it is valid). */
  errors(schema: JsonSchema, value: unknown): string[] {
    let validate = this.#compiled.get(schema);
    if (!validate) {
      validate = this.#ajv.compile(withAbsoluteRefs(schema) as object);
      this.#compiled.set(schema, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
  }
}
