import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { canonicalJson, type JsonValue } from '../../domain/canonical.js';
import { PayloadTooLargeError } from '../../domain/errors.js';
import { checkOpsDepth, type HttpLimits } from '../../domain/limits.js';
import { MAX_SCHEMA_VERSION } from '../../domain/state-schema.js';
import type { HistoryChange } from '../../history/history-model.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { jsonBodyOf } from '../json-body.js';
import {
  APPEND_ERRORS,
  errorResponses,
  READ_ERRORS,
  VERIFIED_READ_ERRORS,
  WRITE_ERRORS,
} from '../openapi-errors.js';
import { SignedTreeHeadSchema } from '../proof-schemas.js';
import { queryInt } from '../query-int.js';
import {
  AppendHeaders,
  BEARER_SECURITY,
  Incarnation,
  json,
  LedgerEventSchema,
  StreamParams,
} from '../schemas.js';
import { StateProofSchema } from '../state-schemas.js';

/** Schemas and routes of a session's history (shared/history/, docs/openai-agents.md). */

const SchemaVersion = z.number().int().min(1).max(MAX_SCHEMA_VERSION);
const Item = z.unknown().openapi({ description: 'A history item: any JSON value' });
const Items = z.array(Item).max(1000);

const HistoryChangeSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('append_items'), items: Items }),
    z.strictObject({
      type: z.literal('replace_suffix'),
      expectedSuffix: Items,
      replacement: Items,
    }),
    z.strictObject({ type: z.literal('replace_history'), items: Items }),
    z.strictObject({ type: z.literal('pop') }),
    z.strictObject({ type: z.literal('clear') }),
  ])
  .openapi('HistoryChange', {
    description:
      'append_items and replace_suffix are the OpenAI Agents SDK’s history transactions; ' +
      'replace_history sets the whole history (replaceHistoryWithCompaction); pop removes ' +
      'the last item; clear empties the history and forgets its operation ids.',
  });

const HistoryChangeBody = z
  .strictObject({
    operationId: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .openapi({
        description:
          'Stable across the retries of one change: kept (with the digest of `change`) as long ' +
          'as the stream lives. Repeated with the same change: 200 `applied: false`, nothing ' +
          'written; with another change: 422 ErrIdempotencyKeyReused, nothing written.',
      }),
    change: HistoryChangeSchema,
    schema: SchemaVersion.optional().openapi({
      description:
        'The schema version of the change’s items (docs/schema-evolution.md, "Sessions"); ' +
        'absent: 1. A history at a newer version refuses it (409 ErrSchemaTooNew); one at an ' +
        'older version must be migrated first (409 ErrSchemaTooOld); a new history records it.',
    }),
  })
  .openapi('HistoryChangeBody', {
    example: {
      operationId: 'turn-1',
      change: {
        type: 'append_items',
        items: [{ type: 'message', role: 'user', content: 'What is the weather in Paris?' }],
      },
    },
  });

const HistoryChangeResult = z
  .object({
    seq: z.number().int().min(0),
    applied: z.boolean(),
    popped: Item.optional(),
    incarnation: Incarnation.optional(),
    treeHead: SignedTreeHeadSchema.optional().openapi({
      description: 'The receipt: the signed tree head after the change (a replay: the original)',
    }),
  })
  .openapi('HistoryChangeResult', { example: { seq: 1, applied: true } });

const HistoryQuery = z.object({
  limit: queryInt({ min: 0 })
    .optional()
    .openapi({ param: { name: 'limit', in: 'query' }, example: 10 }),
  proof: z
    .enum(['true', 'false'])
    .optional()
    .transform((v) => v === 'true')
    .openapi({
      param: { name: 'proof', in: 'query' },
      description:
        'true: the answer also carries `proof`, what a client checks the items against ' +
        'the chain with (docs/openai-agents.md, "Verified reads")',
    }),
});

const HistoryProofSchema = z
  .object({
    event: LedgerEventSchema.openapi({
      description: 'The event that set the state the items are read from (the head’s stateSeq)',
    }),
    state: StateProofSchema.optional().openapi({
      description: 'The Merkle path of `/items` in that state; its value is the whole history',
    }),
    whole: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({
        description:
          'Instead of `state`, on a stream whose state digest is v1 (no proof by path): the ' +
          'whole state, whose v1 digest is the one the event records',
      }),
  })
  .openapi('HistoryProof');

const HistoryResult = z
  .object({
    seq: z.number().int().min(0),
    items: z.array(Item),
    proof: HistoryProofSchema.optional(),
    schema: SchemaVersion.optional().openapi({
      description: 'The schema version of the items, when above 1 (docs/schema-evolution.md)',
    }),
  })
  .openapi('HistoryResult', {
    example: {
      seq: 1,
      items: [{ type: 'message', role: 'user', content: 'What is the weather in Paris?' }],
    },
  });

export interface HistoryRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

/** Items of a change, limited like a checkpoint's ops (one delta carries them). */
const checkItems = (change: HistoryChange, limits: HttpLimits): void => {
  const values: JsonValue[] =
    change.type === 'append_items' || change.type === 'replace_history'
      ? change.items
      : change.type === 'replace_suffix'
        ? change.replacement
        : [];
  checkOpsDepth(
    values.map((value) => ({ op: 'set', path: '/items/0', value })),
    limits,
  );
  const bytes = Buffer.byteLength(canonicalJson(values), 'utf8');
  if (bytes > limits.maxPayloadBytes) {
    throw new PayloadTooLargeError(
      `the items are ${bytes} bytes as canonical JSON; the limit is ${limits.maxPayloadBytes}`,
    );
  }
};

/** GET and POST /streams/{streamId}/history. */
export const historyRoutes = ({ ledger, keys, limits }: HistoryRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const write = requireKey({ keys, scope: 'write' });

  const get = createRoute({
    method: 'get',
    path: '/streams/{streamId}/history',
    summary: 'Read a session’s history',
    description:
      'The last `limit` items of the history (all without `limit`), oldest first, from the ' +
      'stream’s state verified as for `GET …/state`. A stream never written answers no items.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: HistoryQuery },
    responses: {
      200: json(HistoryResult, 'The items'),
      ...errorResponses(READ_ERRORS, VERIFIED_READ_ERRORS, 'ErrPruned', 'ErrDivergenceDetected'),
    },
  });
  app.openapi(get, async (c) => {
    const { streamId } = c.req.valid('param');
    const { limit, proof } = c.req.valid('query');
    const tenant = principalOf(c).tenant;
    const page = await ledger.history.read(tenant, streamId, {
      limit,
      proof,
      memory: c.get('memory'),
    });
    return c.json(page, 200);
  });

  const change = createRoute({
    method: 'post',
    path: '/streams/{streamId}/history',
    summary: 'Change a session’s history',
    description:
      'Evaluated against the stored history and written as one delta checkpoint, with the ' +
      'operation id’s record in the same commit. A replace_suffix whose expectedSuffix is ' +
      'not the history’s suffix (canonical JSON) is 409 ErrDivergenceDetected; nothing is ' +
      'written on any error.',
    security: BEARER_SECURITY,
    middleware: [write, jsonBodyOf(limits)] as const,
    request: {
      params: StreamParams,
      // No Idempotency-Key: the body's operationId is the change's.
      headers: AppendHeaders.omit({ 'Idempotency-Key': true }),
      body: { required: true, content: { 'application/json': { schema: HistoryChangeBody } } },
    },
    responses: {
      200: json(HistoryChangeResult, 'Applied, or applied before (`applied: false`)'),
      ...errorResponses(
        WRITE_ERRORS,
        APPEND_ERRORS,
        'ErrPruned',
        'ErrDivergenceDetected',
        'ErrInvalidDelta',
        'ErrDraining',
        'ErrStreamRecreated',
        'ErrSchemaTooNew',
        'ErrSchemaTooOld',
      ),
    },
  });
  app.openapi(change, async (c) => {
    const { streamId } = c.req.valid('param');
    const body = c.req.valid('json');
    // Parsed from JSON text, so every item is a JSON value.
    const requested = body.change as HistoryChange;
    checkItems(requested, limits);
    const outcome = await ledger.history.change({
      tenant: principalOf(c).tenant,
      stream: streamId,
      change: requested,
      operationId: body.operationId,
      schema: body.schema,
      fence: c.req.valid('header')['Hefesto-Fencing-Token'],
      incarnation: c.req.valid('header')['Hefesto-Incarnation'],
      memory: c.get('memory'),
    });
    return c.json(outcome, 200);
  });

  return app;
};
