import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { checkMeta } from '../../commit/labels.js';
import type { JsonValue } from '../../domain/canonical.js';
import { canonicalJson } from '../../domain/canonical.js';
import { InvalidInputError, PayloadTooLargeError } from '../../domain/errors.js';
import { checkExpiryHint } from '../../domain/expiry-hint.js';
import { checkOpsDepth, type HttpLimits } from '../../domain/limits.js';
import type { DeltaOp } from '../../domain/state.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { readStateValue } from '../../state/state-read.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { requestDigest } from '../idempotency-key.js';
import { jsonBodyOf } from '../json-body.js';
import { streamedJson } from '../json-stream.js';
import {
  APPEND_ERRORS,
  errorResponses,
  READ_ERRORS,
  VERIFIED_READ_ERRORS,
  WRITE_ERRORS,
} from '../openapi-errors.js';
import {
  AppendHeaders,
  BEARER_SECURITY,
  IdempotencyHeaders,
  idempotencyExample,
  json,
  StreamParams,
} from '../schemas.js';
import {
  CheckpointBody,
  CheckpointResult,
  ForkBody,
  ForkResult,
  StateQuery,
  StateResult,
  StateValueResult,
} from '../state-schemas.js';

export interface StateRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

const idempotency = (key: string | undefined, path: string, body: unknown) =>
  key === undefined ? undefined : { key, digest: requestDigest('POST', path, body) };

/** /streams/{streamId}/checkpoints, /state and /fork: the agent's JSON state. */
export const stateRoutes = ({ ledger, keys, limits }: StateRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const write = requireKey({ keys, scope: 'write' });
  const body = jsonBodyOf(limits);

  const checkpoint = createRoute({
    method: 'post',
    path: '/streams/{streamId}/checkpoints',
    summary: 'Write a delta checkpoint',
    description:
      'SET/DELETE operations (RFC 6901 paths) on the stream state, recorded as a hash-chained ' +
      '`hefesto.delta` event. `baseDigest` must be the current state digest (else 409 ' +
      'ErrDivergenceDetected); ops that cannot apply are 422 ErrInvalidDelta. With `label`, ' +
      '`meta`, `parentLabel`, `baseSeq`, `schema` or `expiry` the event is a v2 delta (docs/records-v2.md); ' +
      'with `migration` it is a `hefesto.migration` (docs/schema-evolution.md). Nothing is ' +
      `written on any error. The ops are limited like an event payload (${limits.maxPayloadBytes} bytes).`,
    security: BEARER_SECURITY,
    middleware: [write, body] as const,
    request: {
      params: StreamParams,
      headers: AppendHeaders.extend(idempotencyExample('"checkpoint-1"')),
      body: { required: true, content: { 'application/json': { schema: CheckpointBody } } },
    },
    responses: {
      201: json(CheckpointResult, 'Checkpointed (or replayed: header Idempotent-Replayed: true)'),
      ...errorResponses(
        WRITE_ERRORS,
        APPEND_ERRORS,
        'ErrPruned',
        'ErrDivergenceDetected',
        'ErrInvalidDelta',
        'ErrDraining',
        'ErrStreamRecreated',
        'ErrSchemaTooNew',
      ),
    },
  });
  app.openapi(checkpoint, async (c) => {
    const { streamId } = c.req.valid('param');
    const req = c.req.valid('json');
    checkOpsDepth(req.ops, limits);
    const bytes = Buffer.byteLength(canonicalJson(req.ops), 'utf8');
    if (bytes > limits.maxPayloadBytes) {
      throw new PayloadTooLargeError(
        `ops are ${bytes} bytes as canonical JSON; the limit is ${limits.maxPayloadBytes}`,
      );
    }
    const result = await ledger.checkpoints.checkpoint({
      tenant: principalOf(c).tenant,
      stream: streamId,
      ops: req.ops as DeltaOp[],
      baseDigest: req.baseDigest,
      stateDigest: req.stateDigest,
      idempotency: idempotency(
        c.req.valid('header')['Idempotency-Key'],
        `/v1/streams/${streamId}/checkpoints`,
        req,
      ),
      fence: c.req.valid('header')['Hefesto-Fencing-Token'],
      incarnation: c.req.valid('header')['Hefesto-Incarnation'],
      baseSeq: req.baseSeq,
      label: req.label,
      meta: req.meta === undefined ? undefined : checkMeta(req.meta as JsonValue),
      parentLabel: req.parentLabel,
      schema: req.schema,
      migration: req.migration,
      expiry: req.expiry === undefined ? undefined : checkExpiryHint(req.expiry),
      memory: c.get('memory'),
    });
    if (result.replayed) c.header('Idempotent-Replayed', 'true');
    const receipt = result.treeHead ? { treeHead: result.treeHead } : {};
    const life = result.incarnation ? { incarnation: result.incarnation } : {};
    return c.json({ seq: result.seq, stateDigest: result.stateDigest, ...life, ...receipt }, 201);
  });

  const state = createRoute({
    method: 'get',
    path: '/streams/{streamId}/state',
    summary: 'Read the state (at the head or any past seq)',
    description:
      'Hydrates from one base snapshot and at most K deltas, verifying the chain of every ' +
      'event read and recomputing every digest; a mismatch fails closed (500 ' +
      'ErrTamperedLedger or 409 ErrDivergenceDetected, with the seq). With `path`, answers only ' +
      'the value there (a `StateValueResult`), and with `proof=true` its Merkle path; a v2 ' +
      'state stored as chunks is read only along the path (docs/state-v2.md).',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: StateQuery },
    responses: {
      200: json(
        z.union([StateResult, StateValueResult]),
        'The state at that seq (with `path`: the value there)',
      ),
      ...errorResponses(
        READ_ERRORS,
        VERIFIED_READ_ERRORS,
        'ErrStreamNotFound',
        'ErrNotFound',
        'ErrPruned',
        'ErrDivergenceDetected',
      ),
    },
  });
  app.openapi(state, async (c) => {
    const { streamId } = c.req.valid('param');
    const { at, path, proof } = c.req.valid('query');
    const tenant = principalOf(c).tenant;
    if (path !== undefined) {
      const value = await readStateValue(
        ledger.states,
        { tenant, stream: streamId, at, path, proof, memory: c.get('memory') },
        { cache: ledger.checkpoints.cache },
      );
      return c.json(value, 200);
    }
    if (proof) throw new InvalidInputError('proof=true needs a path');
    const hydrated = await ledger.states.hydrate(tenant, streamId, at, {
      memory: c.get('memory'),
    });
    const result = {
      seq: hydrated.seq,
      state: hydrated.state,
      stateDigest: hydrated.stateDigest,
      digestVersion: hydrated.working.version,
    };
    // Serialized as the socket takes it, taking turns of the event loop (json-stream.ts); the
    // request's memory stays charged until the state is sent (memory-pool.ts).
    return streamedJson(c, result, ledger.states.chunks.pacer.pause);
  });

  const fork = createRoute({
    method: 'post',
    path: '/streams/{streamId}/fork',
    summary: 'Fork a new stream from any seq',
    description:
      'Creates `newStreamId` whose state at its start is this stream’s state at `at`; its ' +
      'first event (`hefesto.fork`) records where it came from. The source is untouched. ' +
      'An existing newStreamId is 409 ErrStreamExists.',
    security: BEARER_SECURITY,
    middleware: [write, body] as const,
    request: {
      params: StreamParams,
      headers: IdempotencyHeaders.extend(idempotencyExample('"fork-1"')),
      body: { required: true, content: { 'application/json': { schema: ForkBody } } },
    },
    responses: {
      201: json(ForkResult, 'The new stream'),
      ...errorResponses(
        WRITE_ERRORS,
        VERIFIED_READ_ERRORS,
        'ErrStreamNotFound',
        'ErrPruned',
        'ErrDivergenceDetected',
        'ErrStreamExists',
        'ErrIdempotencyKeyReused',
        'ErrIdempotencyInProgress',
      ),
    },
  });
  app.openapi(fork, async (c) => {
    const { streamId } = c.req.valid('param');
    const req = c.req.valid('json');
    const result = await ledger.checkpoints.fork({
      tenant: principalOf(c).tenant,
      source: streamId,
      at: req.at,
      newStreamId: req.newStreamId,
      memory: c.get('memory'),
      idempotency: idempotency(
        c.req.valid('header')['Idempotency-Key'],
        `/v1/streams/${streamId}/fork`,
        req,
      ),
    });
    if (result.replayed) c.header('Idempotent-Replayed', 'true');
    const { replayed: _, ...response } = result;
    return c.json(response, 201);
  });

  return app;
};
