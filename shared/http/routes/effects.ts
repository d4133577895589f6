import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { JsonValue } from '../../domain/canonical.js';
import { NotFoundError } from '../../domain/errors.js';
import type { HttpLimits } from '../../domain/limits.js';
import type { KeyService } from '../../keys/keys.js';
import type { LeaseRecord } from '../../leases/leases.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import {
  BeginBody,
  BeginResult,
  CompensateResult,
  CompleteBody,
  DrainBody,
  DrainResult,
  EffectParams,
  EffectResult,
  FailBody,
  FencingHeaders,
  LeaseBody,
  LeaseOwnerBody,
  LeaseResult,
  RenewBody,
  SagaParams,
} from '../effect-schemas.js';
import { jsonBodyOf } from '../json-body.js';
import {
  APPEND_ERRORS,
  errorResponses,
  READ_ERRORS,
  VERIFIED_READ_ERRORS,
  WRITE_ERRORS,
} from '../openapi-errors.js';
import { BEARER_SECURITY, json, StreamParams } from '../schemas.js';

export interface EffectRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

const leaseJson = (l: LeaseRecord) => ({
  owner: l.owner,
  epoch: l.epoch,
  expiresAt: new Date(l.expiresAt).toISOString(),
  draining: l.draining,
  exclusive: l.exclusive,
});

/** The writer's fencing token (validated by FencingHeaders on the route). */
const fenceOf = (c: Context<AppEnv>): number | undefined => {
  const token = c.req.header('hefesto-fencing-token');
  return token === undefined ? undefined : Number(token);
};

const bodyOf = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

/** Leases (fencing, hot migration), exactly-once effects and saga compensation. */
export const effectRoutes = ({ ledger, keys, limits }: EffectRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const write = requireKey({ keys, scope: 'write' });
  const base = {
    method: 'post' as const,
    security: BEARER_SECURITY,
    middleware: [write, jsonBodyOf(limits)],
  };
  const leaseErrors = errorResponses(WRITE_ERRORS, 'ErrFenced', 'ErrDraining');
  // Finishing an effect (or beginning a finished one) appends its ledger event.
  const finishErrors = errorResponses(WRITE_ERRORS, APPEND_ERRORS, 'ErrEffectNotHeld');

  const acquire = createRoute({
    ...base,
    path: '/streams/{streamId}/lease',
    summary: 'Acquire the stream lease',
    description:
      'Takes the lease with a new epoch (epoch + 1), also for the same owner again: a restarted ' +
      'worker fences its predecessor. Another owner’s live lease is 409 ErrLeaseHeld; extend ' +
      'yours with /renew. Send the epoch as Hefesto-Fencing-Token on every write: while the ' +
      'lease is held, writes with another epoch, or (unless acquired with exclusive: false) ' +
      'with none, are 409 ErrFenced. A stream being deleted is 404 ErrStreamNotFound.',
    request: { params: StreamParams, body: bodyOf(LeaseBody) },
    responses: {
      200: json(LeaseResult, 'The lease'),
      ...errorResponses(WRITE_ERRORS, 'ErrLeaseHeld', 'ErrStreamNotFound'),
    },
  });
  app.openapi(acquire, async (c) => {
    const { streamId } = c.req.valid('param');
    const req = c.req.valid('json');
    const lease = await ledger.leases.acquire(
      principalOf(c).tenant,
      streamId,
      req.owner,
      req.ttlMs,
      { exclusive: req.exclusive },
    );
    return c.json(leaseJson(lease), 200);
  });

  const read = createRoute({
    method: 'get',
    path: '/streams/{streamId}/lease',
    summary: 'The stream lease (who holds it, epoch, draining)',
    security: BEARER_SECURITY,
    middleware: [requireKey({ keys, scope: 'read' })],
    request: { params: StreamParams },
    responses: {
      200: json(LeaseResult, 'The lease'),
      ...errorResponses(READ_ERRORS, 'ErrNotFound'),
    },
  });
  app.openapi(read, async (c) => {
    const { streamId } = c.req.valid('param');
    const lease = await ledger.leases.get(principalOf(c).tenant, streamId);
    if (!lease) throw new NotFoundError(`stream ${streamId} has no lease`);
    return c.json({ ...leaseJson(lease), active: lease.active }, 200);
  });

  const renew = createRoute({
    ...base,
    path: '/streams/{streamId}/lease/renew',
    summary: 'Renew the lease',
    request: { params: StreamParams, body: bodyOf(RenewBody) },
    responses: { 200: json(LeaseResult, 'The lease'), ...leaseErrors },
  });
  app.openapi(renew, async (c) => {
    const { streamId } = c.req.valid('param');
    const r = c.req.valid('json');
    const lease = await ledger.leases.renew(
      principalOf(c).tenant,
      streamId,
      r.owner,
      r.epoch,
      r.ttlMs,
    );
    return c.json(leaseJson(lease), 200);
  });

  const release = createRoute({
    ...base,
    path: '/streams/{streamId}/lease/release',
    summary: 'Release the lease (its epoch is fenced from now on)',
    request: { params: StreamParams, body: bodyOf(LeaseOwnerBody) },
    responses: { 204: { description: 'Released' }, ...leaseErrors },
  });
  app.openapi(release, async (c) => {
    const { streamId } = c.req.valid('param');
    const r = c.req.valid('json');
    await ledger.leases.release(principalOf(c).tenant, streamId, r.owner, r.epoch);
    return c.body(null, 204);
  });

  const drain = createRoute({
    ...base,
    path: '/streams/{streamId}/lease/drain',
    summary: 'Drain the stream for a hand-over',
    description:
      'Marks the stream draining (new turns refused with 409 ErrDraining; in-flight writes still ' +
      'land), waits until it is quiet (at most graceMs), writes a terminal base snapshot and ' +
      'releases the lease. The next worker acquires epoch + 1; the old epoch is fenced.',
    request: { params: StreamParams, body: bodyOf(DrainBody) },
    responses: {
      200: json(DrainResult, 'Drained and released'),
      ...errorResponses(
        WRITE_ERRORS,
        VERIFIED_READ_ERRORS,
        'ErrStreamNotFound',
        'ErrPruned',
        'ErrDivergenceDetected',
        'ErrFenced',
        'ErrDraining',
      ),
    },
  });
  app.openapi(drain, async (c) => {
    const { streamId } = c.req.valid('param');
    const r = c.req.valid('json');
    const result = await ledger.drainer.drain(
      principalOf(c).tenant,
      streamId,
      r.owner,
      r.epoch,
      r.graceMs,
    );
    return c.json(result, 200);
  });

  const begin = createRoute({
    ...base,
    path: '/streams/{streamId}/effects/{effectKey}/begin',
    summary: 'Begin a side effect (exactly once)',
    description:
      'acquired: run it (pass effectKey to the external system as its idempotency key), then ' +
      'complete or fail it. completed / failed: the stored outcome; do not run it again. ' +
      'in_progress: someone holds it; retry after retryAfterMs. unknown_outcome: a holder’s ' +
      'lease expired before it finished; you now hold it and must ask the external system ' +
      'whether it happened before completing or failing it. The key names one effect: a begin ' +
      'with another kind or another intent (compared as canonical JSON) is 422 ' +
      'ErrEffectMismatch. A stream being deleted is 404 ErrStreamNotFound (begin, complete, fail).',
    request: { params: EffectParams, headers: FencingHeaders, body: bodyOf(BeginBody) },
    responses: {
      200: json(BeginResult, 'Where the effect stands'),
      ...errorResponses(WRITE_ERRORS, APPEND_ERRORS, 'ErrEffectMismatch'),
    },
  });
  app.openapi(begin, async (c) => {
    const { streamId, effectKey } = c.req.valid('param');
    const req = c.req.valid('json');
    const outcome = await ledger.effects.begin({
      tenant: principalOf(c).tenant,
      stream: streamId,
      effectKey,
      kind: req.kind,
      intent: req.intent as JsonValue,
      compensation: req.compensation as JsonValue | undefined,
      sagaId: req.sagaId,
      leaseMs: req.leaseMs,
      fence: c.req.valid('header')['Hefesto-Fencing-Token'],
    });
    return c.json(outcome, 200);
  });

  /** complete and fail: the same call with another outcome. */
  const finish = (
    c: Context<AppEnv>,
    { streamId, effectKey }: { streamId: string; effectKey: string },
    holder: string,
    outcome: { result: JsonValue } | { error: JsonValue },
  ) =>
    ledger.effects.finish({
      tenant: principalOf(c).tenant,
      stream: streamId,
      effectKey,
      holder,
      outcome,
      fence: fenceOf(c),
    });

  const finishDescription =
    'Recorded once, and as a ledger event; a repeat of the same call answers the same. Only ' +
    'the holder may finish it: otherwise 409 ErrEffectNotHeld.';
  const complete = createRoute({
    ...base,
    path: '/streams/{streamId}/effects/{effectKey}/complete',
    summary: 'Complete a held effect',
    description: finishDescription,
    request: { params: EffectParams, headers: FencingHeaders, body: bodyOf(CompleteBody) },
    responses: { 200: json(EffectResult, 'The finished effect'), ...finishErrors },
  });
  app.openapi(complete, async (c) => {
    const req = c.req.valid('json');
    const record = await finish(c, c.req.valid('param'), req.holder, {
      result: req.result as JsonValue,
    });
    return c.json(
      { effectKey: record.effectKey, status: record.status, result: record.result },
      200,
    );
  });

  const fail = createRoute({
    ...base,
    path: '/streams/{streamId}/effects/{effectKey}/fail',
    summary: 'Fail a held effect',
    description: finishDescription,
    request: { params: EffectParams, headers: FencingHeaders, body: bodyOf(FailBody) },
    responses: { 200: json(EffectResult, 'The finished effect'), ...finishErrors },
  });
  app.openapi(fail, async (c) => {
    const req = c.req.valid('json');
    const record = await finish(c, c.req.valid('param'), req.holder, {
      error: req.error as JsonValue,
    });
    return c.json({ effectKey: record.effectKey, status: record.status, error: record.error }, 200);
  });

  const compensate = createRoute({
    method: 'post',
    path: '/streams/{streamId}/sagas/{sagaId}/compensate',
    summary: 'Compensate a saga',
    description:
      'The completed effects of the saga that registered a compensation, latest first. Each ' +
      'compensation is begun as an effect of its own (key compensate:{effectKey}), so it runs ' +
      'exactly once: run the acquired ones and complete them like any effect.',
    security: BEARER_SECURITY,
    middleware: [write] as const,
    request: { params: SagaParams, headers: FencingHeaders },
    responses: {
      200: json(CompensateResult, 'The compensations, in order'),
      ...errorResponses(READ_ERRORS, APPEND_ERRORS, 'ErrEffectMismatch'),
    },
  });
  app.openapi(compensate, async (c) => {
    const { streamId, sagaId } = c.req.valid('param');
    const tenant = principalOf(c).tenant;
    const fence = c.req.valid('header')['Hefesto-Fencing-Token'];
    const compensations = [];
    for (const e of await ledger.effects.compensable(tenant, streamId, sagaId)) {
      const compensationKey = `compensate:${e.effectKey}`;
      const begun = await ledger.effects.begin({
        tenant,
        stream: streamId,
        effectKey: compensationKey,
        kind: `compensate:${e.kind}`,
        intent: e.compensation,
        sagaId: `${sagaId}:compensation`,
        fence,
      });
      compensations.push({
        effectKey: e.effectKey,
        compensationKey,
        compensation: e.compensation,
        begin: begun,
      });
    }
    return c.json({ sagaId, compensations }, 200);
  });

  return app;
};
