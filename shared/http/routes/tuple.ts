import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { InvalidInputError } from '../../domain/errors.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { streamedJson } from '../json-stream.js';
import { errorResponses, READ_ERRORS, VERIFIED_READ_ERRORS } from '../openapi-errors.js';
import { BEARER_SECURITY, json, StreamParams } from '../schemas.js';
import { metaFilter } from './checkpoints.js';
import {
  ChannelHistoryResult,
  HistoryQuery,
  TuplePageQuery,
  TuplePageResult,
  TupleQuery,
  TupleResult,
} from './tuple-schemas.js';

export interface TupleRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
}

/**
 * /streams/{streamId}/tuple and /channel-history: what a LangGraph saver's getTuple and
 * getDeltaChannelHistory need, one request each (tuple-read.ts, delta-history.ts).
 */
export const tupleRoutes = ({ ledger, keys }: TupleRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });

  const tuple = createRoute({
    method: 'get',
    path: '/streams/{streamId}/tuple',
    summary: 'A checkpoint, its state and its pending writes, conditionally',
    description:
      'The checkpoint `label` (default: the head’s state) with its pending writes, and its state ' +
      'as the caller needs it: with `sinceSeq` and `sinceDigest` (the state it holds), ' +
      '`unchanged` when that is the state, else the ops of the deltas after it when it is an ' +
      'earlier state of the same line (a few, no branch, no value set by ref), else the state ' +
      'whole. Everything is read from the verified chain as `GET .../state`, `.../checkpoints/' +
      '{label}` and `.../writes` read it (500 ErrTamperedLedger on a mismatch).',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: TupleQuery },
    responses: {
      200: json(TupleResult, 'The checkpoint and what changed'),
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
  app.openapi(tuple, async (c) => {
    const { streamId } = c.req.valid('param');
    const { label, sinceSeq, sinceDigest } = c.req.valid('query');
    if ((sinceSeq === undefined) !== (sinceDigest === undefined)) {
      throw new InvalidInputError('sinceSeq and sinceDigest go together');
    }
    const result = await ledger.tuples.read({
      tenant: principalOf(c).tenant,
      stream: streamId,
      label,
      since:
        sinceSeq === undefined ? undefined : { seq: sinceSeq, stateDigest: sinceDigest as string },
      memory: c.get('memory'),
    });
    if (result.state === undefined) return c.json(result, 200);
    // A whole state is serialized as the socket takes it (as GET .../state does).
    return streamedJson(c, result, ledger.states.chunks.pacer.pause);
  });

  const history = createRoute({
    method: 'get',
    path: '/streams/{streamId}/channel-history',
    summary: 'Channel histories along a checkpoint’s parent chain',
    description:
      'For each `channel`, the pending writes of that channel on the checkpoint’s ancestors ' +
      '(parent first, along their parentLabel), up to and including the nearest one whose state ' +
      'holds `{seedAt}/{channel}`, and that value as the seed (LangGraph’s ' +
      'getDeltaChannelHistory), in one request whatever the depth. Each ancestor’s writes are ' +
      'checked against the digest the chain committed for them; the seeds are read from the ' +
      'verified state (500 ErrTamperedLedger on a mismatch).',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: HistoryQuery },
    responses: {
      200: json(ChannelHistoryResult, 'The histories, by channel'),
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
  app.openapi(history, async (c) => {
    const { streamId } = c.req.valid('param');
    const { label, channel, seedAt } = c.req.valid('query');
    const channels = await ledger.channelHistory.read({
      tenant: principalOf(c).tenant,
      stream: streamId,
      label,
      channels: typeof channel === 'string' ? [channel] : (channel ?? []),
      seedAt,
      memory: c.get('memory'),
    });
    return c.json({ channels }, 200);
  });

  const page = createRoute({
    method: 'get',
    path: '/streams/{streamId}/tuples',
    summary: 'A page of checkpoints with their states and pending writes',
    description:
      'The checkpoint list’s page (newest first, `meta.<key>=<value>` filters as GET ' +
      '.../checkpoints) with each checkpoint’s pending writes and state: the oldest’s whole, each ' +
      'newer one as the ops of the deltas from the one after it in the page when it is on its ' +
      'line (else whole), so a page sends one state. Read and checked as GET .../checkpoints, ' +
      '.../state and .../writes read them.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: TuplePageQuery },
    responses: {
      200: json(TuplePageResult, 'The page'),
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
  app.openapi(page, async (c) => {
    const { streamId } = c.req.valid('param');
    const { before, beforeLabel, limit } = c.req.valid('query');
    if (before !== undefined && beforeLabel !== undefined) {
      throw new InvalidInputError('before and beforeLabel do not go together');
    }
    const result = await ledger.tuples.page(principalOf(c).tenant, streamId, {
      before,
      beforeLabel,
      limit,
      meta: metaFilter(c.req.queries()),
      memory: c.get('memory'),
    });
    const body = { ...result, next: result.next ?? null };
    return streamedJson(c, body, ledger.states.chunks.pacer.pause);
  });

  return app;
};
