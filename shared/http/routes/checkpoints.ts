import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { JsonValue } from '../../domain/canonical.js';
import { InvalidInputError, PayloadTooLargeError } from '../../domain/errors.js';
import type { HttpLimits } from '../../domain/limits.js';
import type { KeyService } from '../../keys/keys.js';
import type { Ledger } from '../../ledger/ledger.js';
import { requireKey } from '../auth.js';
import { type AppEnv, principalOf } from '../context.js';
import { FencingHeaders } from '../effect-schemas.js';
import { jsonBodyOf } from '../json-body.js';
import { BEARER_SECURITY, json, problemResponses, StreamParams } from '../schemas.js';
import {
  CheckpointLabel,
  CheckpointList,
  CheckpointListQuery,
  LabelParams,
  PendingWriteList,
  PendingWritesBody,
  PendingWritesResult,
} from './checkpoints-schemas.js';

export interface CheckpointRoutesDeps {
  ledger: Ledger;
  keys: KeyService;
  limits: HttpLimits;
}

const META_PARAM = 'meta.';

/** `meta.<key>=<value>` query parameters: the value as JSON when it parses, else a string. */
export const metaFilter = (query: Record<string, string[]>): Record<string, JsonValue> => {
  const out: Record<string, JsonValue> = {};
  for (const [name, values] of Object.entries(query)) {
    if (!name.startsWith(META_PARAM)) continue;
    const key = name.slice(META_PARAM.length);
    const raw = values.at(-1) ?? '';
    if (key === '') throw new InvalidInputError('a meta filter needs a key: meta.<key>=<value>');
    try {
      out[key] = JSON.parse(raw) as JsonValue;
    } catch {
      out[key] = raw;
    }
  }
  return out;
};

/**
 * /streams/{streamId}/checkpoints (list), /checkpoints/{label} and its pending writes: what
 * a LangGraph saver reads and writes beside the checkpoints themselves (labels.ts,
 * pending-writes.ts). Every route first reads the head, so a deleted stream is gone at once.
 */
export const checkpointRoutes = ({ ledger, keys, limits }: CheckpointRoutesDeps) => {
  const app = new OpenAPIHono<AppEnv>();
  const read = requireKey({ keys, scope: 'read' });
  const write = requireKey({ keys, scope: 'write' });

  const getLabel = createRoute({
    method: 'get',
    path: '/streams/{streamId}/checkpoints/{label}',
    summary: 'A labelled checkpoint',
    description:
      'The seq, state digest, meta and parent of the checkpoint written with this `label`: ' +
      'one record read, no scan. Its state: `GET .../state?at={seq}`.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: LabelParams },
    responses: {
      200: json(CheckpointLabel, 'The checkpoint'),
      ...problemResponses(400, 401, 403, 404, 500, 503),
    },
  });
  app.openapi(getLabel, async (c) => {
    const { streamId, label } = c.req.valid('param');
    const tenant = principalOf(c).tenant;
    await ledger.reader.head(tenant, streamId);
    return c.json(await ledger.labels.get(tenant, streamId, label), 200);
  });

  const list = createRoute({
    method: 'get',
    path: '/streams/{streamId}/checkpoints',
    summary: 'List labelled checkpoints, newest first',
    description:
      'From the stream’s checkpoint index: one query, its cost proportional to the page. ' +
      '`meta.<key>=<value>` (repeatable) keeps checkpoints whose meta has that top-level ' +
      'value, compared as canonical JSON (`meta.step=1` is the number, `meta.source=loop` or ' +
      '`meta.source="loop"` the string); a filtered page scans at most 1000 entries and ' +
      'answers `next` where it stopped.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: StreamParams, query: CheckpointListQuery },
    responses: {
      200: json(CheckpointList, 'A page of checkpoints'),
      ...problemResponses(400, 401, 403, 404, 500, 503),
    },
  });
  app.openapi(list, async (c) => {
    const { streamId } = c.req.valid('param');
    const { before, limit } = c.req.valid('query');
    const tenant = principalOf(c).tenant;
    await ledger.reader.head(tenant, streamId);
    const page = await ledger.labels.list(tenant, streamId, {
      before,
      limit,
      meta: metaFilter(c.req.queries()),
    });
    return c.json({ checkpoints: page.checkpoints, next: page.next ?? null }, 200);
  });

  const putWrites = createRoute({
    method: 'post',
    path: '/streams/{streamId}/checkpoints/{label}/writes',
    summary: 'Store pending writes of a task',
    description:
      'Writes of one task attached to the checkpoint `label`. A write with `idx >= 0` is ' +
      'stored once (a repeat changes nothing, so a retry is exactly-once without a key); one ' +
      'with a negative idx (LangGraph’s special channels) replaces the stored one. Fenced like ' +
      'other writes (409 ErrFenced: a stale epoch, or none while the lease is held ' +
      'exclusively). Once the stream’s state has moved on from the checkpoint, its writes are ' +
      'frozen and then bound to the chain, and a write that changes them is a `hefesto.writes` ' +
      'event (docs/ledger-format.md, “Pending writes”). A value is ' +
      `limited like an event payload (${limits.maxPayloadBytes} bytes); a larger one goes by ` +
      '`ref` (uploaded first as chunks; the stream holds them against the chunk GC).',
    security: BEARER_SECURITY,
    middleware: [write, jsonBodyOf(limits)] as const,
    request: {
      params: LabelParams,
      headers: FencingHeaders,
      body: { required: true, content: { 'application/json': { schema: PendingWritesBody } } },
    },
    responses: {
      200: json(PendingWritesResult, 'Stored'),
      ...problemResponses(400, 401, 403, 404, 409, 413, 415, 500, 503),
    },
  });
  app.openapi(putWrites, async (c) => {
    const { streamId, label } = c.req.valid('param');
    const body = c.req.valid('json');
    for (const w of body.writes) {
      if (w.value === undefined) continue; // by ref: sized by its ref (pending-writes.ts)
      const bytes = Buffer.byteLength(JSON.stringify(w.value), 'utf8');
      if (bytes > limits.maxPayloadBytes) {
        throw new PayloadTooLargeError(
          `write ${w.idx} is ${bytes} bytes; the limit is ${limits.maxPayloadBytes}`,
        );
      }
    }
    const result = await ledger.pendingWrites.put(
      principalOf(c).tenant,
      streamId,
      label,
      {
        taskId: body.taskId,
        taskPath: body.taskPath,
        writes: body.writes as Array<{
          idx: number;
          channel: string;
          value?: JsonValue;
          ref?: { hash: string; size: number };
        }>,
      },
      c.req.valid('header')['Hefesto-Fencing-Token'],
    );
    return c.json(result, 200);
  });

  const getWrites = createRoute({
    method: 'get',
    path: '/streams/{streamId}/checkpoints/{label}/writes',
    summary: 'Pending writes of a checkpoint',
    description:
      'Every pending write of the checkpoint, sorted by (task path, task id, idx). The writes of ' +
      'a checkpoint the stream has moved on from are checked against the digest the chain ' +
      'committed for them first (500 ErrTamperedLedger on any edited, deleted or added write); ' +
      'those of the latest checkpoint and of the one it left are served as stored until the ' +
      'next checkpoint binds them.',
    security: BEARER_SECURITY,
    middleware: [read] as const,
    request: { params: LabelParams },
    responses: {
      200: json(PendingWriteList, 'The writes'),
      ...problemResponses(400, 401, 403, 404, 410, 500, 503),
    },
  });
  app.openapi(getWrites, async (c) => {
    const { streamId, label } = c.req.valid('param');
    const writes = await ledger.pendingWrites.list(principalOf(c).tenant, streamId, label);
    return c.json({ writes }, 200);
  });

  return app;
};
