import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { EventInput } from '../../domain/event.js';
import { checkAppendLimits, type HttpLimits } from '../../domain/limits.js';
import { digestVersionOf } from '../../domain/state-digest.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { eventsPageJson } from '../events-json.js';
import { requestDigest } from '../idempotency-key.js';
import { jsonBodyOf } from '../json-body.js';
import {
  APPEND_ERRORS,
  errorResponses,
  READ_ERRORS,
  VERIFIED_READ_ERRORS,
  WRITE_ERRORS,
} from '../openapi-errors.js';
import {
  AppendBody,
  AppendHeaders,
  AppendResult,
  BEARER_SECURITY,
  EventsPage,
  json,
  ReadQuery,
  RepairResult,
  StreamHead,
  StreamParams,
  VerifyResult,
} from '../schemas.js';

export interface StreamRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * /streams/{streamId}...: append, head, read, verify, and the operator's head repair. The
 * tenant is always the key's.
 */
export const streamRoutes = ({ ledger, keys, limits }: StreamRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const write = requireKey({ keys, scope: 'write' });
  const admin = requireKey({ keys, scope: 'admin' });

  const append = createRoute({
    method: 'post',
    path: '/streams/{streamId}/events',
    summary: 'Append events',
    description:
      `Appends 1..${limits.maxEvents} events as one atomic batch. Payloads up to ` +
      `${limits.maxPayloadBytes} bytes of canonical JSON each; bodies up to ` +
      `${limits.maxBodyBytes} bytes.`,
    security: BEARER_SECURITY,
    middleware: [write, jsonBodyOf(limits)] as const,
    request: {
      params: StreamParams,
      headers: AppendHeaders,
      body: { required: true, content: { 'application/json': { schema: AppendBody } } },
    },
    responses: {
      201: json(AppendResult, 'Appended (or replayed: header Idempotent-Replayed: true)'),
      ...errorResponses(WRITE_ERRORS, APPEND_ERRORS, 'ErrSeqConflict', 'ErrStreamRecreated'),
    },
  });
  app.openapi(append, async (c) => {
    const { streamId } = c.req.valid('param');
    const body = c.req.valid('json');
    const key = c.req.valid('header')['Idempotency-Key'];
    const epoch = c.req.valid('header')['Hefesto-Fencing-Token'];
    const incarnation = c.req.valid('header')['Hefesto-Incarnation'];
    // Parsed from JSON text, so every payload is a JSON value.
    const events = body.events as EventInput[];
    checkAppendLimits(events, limits);
    const path = `/v1/streams/${streamId}/events`;
    const { response, replayed } = await ledger.appender.append({
      tenant: principalOf(c).tenant,
      stream: streamId,
      events,
      expectedSeq: body.expectedSeq,
      ttlMs: body.ttlSeconds === undefined ? undefined : body.ttlSeconds * 1000,
      idempotency:
        key === undefined ? undefined : { key, digest: requestDigest('POST', path, body) },
      fence: epoch === undefined ? undefined : { epoch, checkpoint: false },
      incarnation,
    });
    if (replayed) c.header('Idempotent-Replayed', 'true');
    const { firstSeq, lastSeq, head, treeHead } = response;
    const receipt = treeHead ? { treeHead } : {};
    const life = response.incarnation ? { incarnation: response.incarnation } : {};
    const at = { seq: head.seq, hash: head.hash };
    return c.json({ firstSeq, lastSeq, head: at, ...life, ...receipt }, 201);
  });

  const head = createRoute({
    method: 'get',
    path: '/streams/{streamId}',
    summary: 'Stream head',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams },
    responses: {
      200: json(StreamHead, 'The chain head'),
      ...errorResponses(READ_ERRORS, VERIFIED_READ_ERRORS, 'ErrStreamNotFound'),
    },
  });
  app.openapi(head, async (c) => {
    const { streamId } = c.req.valid('param');
    const h = await ledger.reader.checkedHead(principalOf(c).tenant, streamId);
    return c.json(
      {
        streamId,
        seq: h.seq,
        hash: h.hash,
        stateDigest: h.stateDigest,
        deltas: h.deltas,
        stateSeq: h.stateSeq,
        createdAt: iso(h.createdAt),
        updatedAt: iso(h.updatedAt),
        digestVersion: digestVersionOf(h),
        ...(h.incarnation && { incarnation: h.incarnation }),
      },
      200,
    );
  });

  const events = createRoute({
    method: 'get',
    path: '/streams/{streamId}/events',
    summary: 'Read events',
    description: 'Verified events from `from` on, at most `limit`, optionally of one `type`.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: ReadQuery },
    responses: {
      200: json(EventsPage, 'A page of events'),
      ...errorResponses(READ_ERRORS, VERIFIED_READ_ERRORS, 'ErrStreamNotFound', 'ErrPruned'),
    },
  });
  app.openapi(events, async (c) => {
    const { streamId } = c.req.valid('param');
    const query = c.req.valid('query');
    const page = await ledger.reader.readSealed(principalOf(c).tenant, streamId, query);
    // The stored payload bytes as they are (events-json.ts); the text is an EventsPage.
    const text = eventsPageJson(page.events, page.next);
    return c.body(text, 200, { 'Content-Type': 'application/json' }) as unknown as ReturnType<
      typeof c.json<{ events: []; next: null }, 200>
    >;
  });

  const verify = createRoute({
    method: 'get',
    path: '/streams/{streamId}/verify',
    summary: 'Verify the stream',
    description:
      'Verifies every object reads depend on: the hash chain of every segment, the head ' +
      'against the chain end and its state against the last checkpoint, every base snapshot ' +
      'against the checkpoint it is bound to, a fork’s origin snapshot, the chunks of values ' +
      'set by ref after the newest base, and the checkpoint list, labels and pending writes ' +
      'against the deltas that commit them. Always 200 for an existing stream: `ok: false` ' +
      'names the first bad object (`segment`, `head`, `snapshot`, `fork-origin`, `value`, ' +
      '`checkpoint`, `pending-writes`), the seq it stands for and the first bad seq.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams },
    responses: {
      200: json(VerifyResult, 'The verification result'),
      ...errorResponses(READ_ERRORS, 'ErrStreamNotFound'),
    },
  });
  app.openapi(verify, async (c) => {
    const { streamId } = c.req.valid('param');
    const result = await ledger.verifier.verify(principalOf(c).tenant, streamId);
    if (result.ok) return c.json({ ok: true as const, seq: result.seq, hash: result.hash }, 200);
    const { code, firstBadSeq, object, seq } = result;
    return c.json({ ok: false as const, code, firstBadSeq, object, seq }, 200);
  });

  const repair = createRoute({
    method: 'post',
    path: '/streams/{streamId}/repair',
    summary: 'Repair the chain head (operators)',
    description:
      'Rebuilds the head of a stream whose head was deleted or no longer matches the chain ' +
      '(reads and appends answer ErrTamperedLedger until then) from its verified segments. ' +
      'A chain that does not verify is not repaired (500 ErrTamperedLedger). Admin scope. See ' +
      'docs/operations.md.',
    security: BEARER_SECURITY,
    middleware: [admin] as const,
    request: { params: StreamParams },
    responses: {
      200: json(RepairResult, 'The head as repaired (repaired: false when it already matched)'),
      ...errorResponses(READ_ERRORS, VERIFIED_READ_ERRORS, 'ErrStreamNotFound', 'ErrSeqConflict'),
    },
  });
  app.openapi(repair, async (c) => {
    const { streamId } = c.req.valid('param');
    const result = await ledger.repair.repair(principalOf(c).tenant, streamId);
    return c.json(result, 200);
  });

  return app;
};
