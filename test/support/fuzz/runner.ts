import { EMPTY_STATE_DIGEST_V2 } from '../../../shared/domain/state-v2/index.js';
import { maxDeep, toJsonText, toParsedValue } from './markers.js';
import type { JsonSchema, Parameter, SchemaValidator } from './openapi.js';
import type { FuzzRequest } from './requests.js';
import { Live } from './schema-arbitrary.js';
import { changes, fingerprint } from './stores.js';
import { type FuzzApp, KEY_SPECS, RUN_STREAM, TENANT } from './world.js';

/**
 * Sends one generated request to the in-process app and checks the answer against the
 * properties of the fuzz test:
 * - `server-error`: no request answers 5xx;
 * - `undocumented-status`: the status is one the document lists for the operation;
 * - `schema-mismatch`: the body (and media type) is what the document says for that status;
 * - `write-on-4xx`: a 4xx leaves everything stored exactly as it was;
 * - `accepted-invalid`: a request the document says is invalid is never answered 2xx;
 * - `auth-not-401`: a secured operation without a valid key answers 401.
 */

export type FailureKind =
  | 'server-error'
  | 'undocumented-status'
  | 'schema-mismatch'
  | 'write-on-4xx'
  | 'accepted-invalid'
  | 'auth-not-401';

/** A request as it went out. */
export interface SentRequest {
  op: string;
  intent: string;
  key: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Decoded path parameters (what the handler sees). */
  params: Record<string, string>;
  /** Why the document calls this request invalid (empty: it does not). */
  invalid: string[];
  /** Deepest JSON nesting sent in the body (0: none of note). */
  depth: number;
}

export interface Failure {
  kind: FailureKind;
  detail: string;
  request: SentRequest;
  status: number;
  response: string;
}

export interface Exchange {
  request: SentRequest;
  status: number;
  code?: string;
  /** The problem's detail, for a 4xx. */
  detail?: string;
  failures: Failure[];
}

/**
 * The one write a 4xx may leave: a fenced writer's segment. The append protocol writes the
 * segment first (put-if-absent at head+1) and moves the head in a transaction conditioned on
 * the lease; when the lease refuses it, the segment stays behind as an orphan that is never
 * served (the head does not name it), is replaced by the next writer, and is removed by the
 * compactor. Checking the lease first would cost every fenced append a read. Records the
 * refusal leaves (`refused#`, marking such an orphan) count as part of it.
 */
const isFencedResidue = (status: number, body: string, change: string): boolean => {
  if (status !== 409 || !/"code":"Err(Fenced|Draining)"/.test(body)) return false;
  return (
    /^created object t\/[^/]+\/s\/[^/]+\/seg\//.test(change) ||
    / refused#\d+$/.test(change.split(':')[0] ?? '')
  );
};

const CANONICAL_INTEGER = /^(0|[1-9]\d*)$/;

export class Runner {
  /**
   * `streamId`: the schema of a stream id (the document's, on GET /v1/streams/{streamId}).
   * Every path parameter named streamId is judged by it, whatever its operation declares:
   * one schema for every stream id is the rule (issue 11 item 2).
   */
  constructor(
    readonly world: FuzzApp,
    readonly tokens: Record<string, string>,
    readonly validator: SchemaValidator,
    readonly streamId: Parameter,
  ) {}

  #tenantOf(key: string): string {
    if (key === 'root') return 'default';
    return KEY_SPECS[key]?.tenant ?? TENANT;
  }

  /** The values of Live markers for this request's tenant, stream and effect. */
  async #liveValues(tenant: string, params: Record<string, string>): Promise<Map<string, unknown>> {
    const { ledger } = this.world;
    const stream = params.streamId ?? 'run-1';
    const attempt = async <T>(read: () => Promise<T>, fallback: T): Promise<T> => {
      try {
        return await read();
      } catch {
        return fallback; // an id the stores refuse: the request will be refused too
      }
    };
    const head = await attempt(() => ledger.appender.readHead(tenant, stream), undefined);
    const lease = await attempt(() => ledger.leases.get(tenant, stream), undefined);
    const effect = params.effectKey
      ? await attempt(
          () => ledger.effects.get(tenant, stream, params.effectKey as string),
          undefined,
        )
      : undefined;
    return new Map<string, unknown>([
      ['stateDigest', head?.stateDigest ?? EMPTY_STATE_DIGEST_V2],
      ['headSeq', head?.seq ?? 0],
      ['holder', effect?.holder ?? 'holder-none'],
      ['leaseOwner', lease?.owner ?? 'worker-1'],
      ['leaseEpoch', lease?.epoch ?? 1],
    ]);
  }

  #paramErrors(p: Parameter | undefined, value: string, where: string): string[] {
    if (!p) return [];
    const types = [p.schema.type].flat();
    if (types.includes('integer') || types.includes('number')) {
      // Canonical decimal integers only (shared/http/query-int.ts): "1e3", "0x10", "+1", " 7",
      // "01" and "1.0" are not another spelling of a number but invalid.
      if (CANONICAL_INTEGER.test(value)) {
        return this.validator.errors(p.schema, Number(value)).map((e) => `${where}: ${e}`);
      }
      return [`${where}: not a canonical decimal integer`];
    }
    return this.validator.errors(p.schema, value).map((e) => `${where}: ${e}`);
  }

  async #resolve(req: FuzzRequest, runStream: string): Promise<SentRequest> {
    const segments: Record<string, string> = {};
    const params: Record<string, string> = {};
    for (const [name, raw] of Object.entries(req.path)) {
      segments[name] = raw === RUN_STREAM ? runStream : raw;
      params[name] = decodeURIComponent(segments[name]);
    }
    const live = await this.#liveValues(this.#tenantOf(req.key), params);
    const liveValue = (m: Live) => live.get(m.name);
    const text = (v: string | Live) => (v instanceof Live ? String(liveValue(v)) : v);
    const declared = new Map((req.op.op.parameters ?? []).map((p) => [`${p.in} ${p.name}`, p]));
    const invalid: string[] = [];

    const path = req.op.path.replace(/\{(\w+)\}/g, (_m, name: string) => segments[name] ?? '');
    for (const [name, value] of Object.entries(params)) {
      const p = name === 'streamId' ? this.streamId : declared.get(`path ${name}`);
      invalid.push(...this.#paramErrors(p, value, `path ${name}`));
    }
    const search = new URLSearchParams();
    for (const [name, v] of req.query) {
      const value = text(v);
      search.append(name, value);
      invalid.push(...this.#paramErrors(declared.get(`query ${name}`), value, `query ${name}`));
    }
    const headers: Record<string, string> = {};
    for (const [name, v] of Object.entries(req.headers)) {
      // As fetch sends it: Headers strip leading and trailing whitespace.
      const value = text(v).trim();
      headers[name] = value;
      invalid.push(...this.#paramErrors(declared.get(`header ${name}`), value, name));
    }

    if (req.key.startsWith('header:')) headers.authorization = req.key.slice('header:'.length);
    else if (req.key !== 'none') headers.authorization = `Bearer ${this.tokens[req.key]}`;
    const secured = (req.op.op.security ?? []).length > 0;
    if (secured && !(req.key in this.tokens && req.key !== 'revoked')) {
      invalid.push('no valid API key');
    }

    let body: string | undefined;
    let depth = 0;
    const requestBody = req.op.op.requestBody;
    if (req.body !== undefined && 'json' in req.body) {
      body = toJsonText(req.body.json, liveValue);
      depth = maxDeep(req.body.json);
      const schema = requestBody?.content['application/json']?.schema as JsonSchema;
      const parsed = toParsedValue(req.body.json, liveValue);
      invalid.push(...this.validator.errors(schema, parsed).map((e) => `body: ${e}`));
    } else if (req.body !== undefined) {
      body = req.body.text;
      invalid.push('body: not JSON');
    } else if (requestBody?.required) {
      invalid.push('body: missing');
    }
    if (requestBody) {
      const contentType = req.contentType === undefined ? 'application/json' : req.contentType;
      if (contentType !== null) headers['content-type'] = contentType;
      if (contentType !== 'application/json') invalid.push(`content-type ${contentType}`);
    }
    const query = search.toString();
    return {
      op: req.op.id,
      intent: req.intent,
      key: req.key,
      method: req.op.method,
      url: query ? `${path}?${query}` : path,
      headers,
      body,
      params,
      invalid,
      depth,
    };
  }

  /** `runStream`: the run's own stream id (percent-encoded), for RUN_STREAM in a path. */
  async send(req: FuzzRequest, runStream = 'run-new'): Promise<Exchange> {
    const sent = await this.#resolve(req, runStream);
    const { objects, records } = this.world;
    const before = await fingerprint(objects, records);
    const res = await this.world.app.request(sent.url, {
      method: sent.method,
      headers: sent.headers,
      body: sent.body,
    });
    const text = await res.text();
    const after = await fingerprint(this.world.objects, this.world.records);
    const failures: Failure[] = [];
    const fail = (kind: FailureKind, detail: string) =>
      failures.push({ kind, detail, request: sent, status: res.status, response: text });

    if (res.status >= 500) fail('server-error', `answered ${res.status}`);
    const documented = req.op.op.responses[String(res.status)];
    if (!documented) {
      fail('undocumented-status', `${res.status} is not documented for ${sent.op}`);
    } else {
      this.#checkBody(documented.content, res, text, fail);
    }
    if (res.status >= 400 && res.status < 500) {
      const changed = changes(before, after).filter((c) => !isFencedResidue(res.status, text, c));
      if (changed.length > 0) fail('write-on-4xx', changed.slice(0, 5).join('; '));
    }
    if (res.status < 300 && sent.invalid.length > 0) {
      fail('accepted-invalid', `accepted though ${sent.invalid.slice(0, 3).join('; ')}`);
    }
    if (sent.invalid.includes('no valid API key') && res.status !== 401) {
      fail('auth-not-401', `answered ${res.status} without a valid key`);
    }
    let problem: { code?: string; detail?: string } = {};
    if (res.status >= 400) {
      try {
        problem = JSON.parse(text) as typeof problem;
      } catch {
        problem = {};
      }
    }
    return { request: sent, status: res.status, ...problem, failures };
  }

  #checkBody(
    content: Record<string, { schema?: JsonSchema }> | undefined,
    res: Response,
    text: string,
    fail: (kind: FailureKind, detail: string) => void,
  ): void {
    if (!content) {
      if (text !== '') fail('schema-mismatch', `${res.status} documents no body but has one`);
      return;
    }
    const type = res.headers.get('content-type')?.split(';')[0]?.trim() ?? '';
    const media = content[type];
    if (!media) {
      fail('schema-mismatch', `content-type ${type} is not one of ${Object.keys(content)}`);
      return;
    }
    if (!type.endsWith('json') || !media.schema) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      fail('schema-mismatch', 'the body is not JSON');
      return;
    }
    const errors = this.validator.errors(media.schema, value);
    if (errors.length > 0) fail('schema-mismatch', errors.slice(0, 4).join('; '));
  }
}
