import type { APIGatewayProxyEventV2, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestBucket,
  createTestTable,
  hasAwsEmulators,
  type TestResource,
} from '../support/aws.js';

/**
 * The Lambda entry, driven with literal API Gateway HTTP API (payload format 2.0) events,
 * against the S3 and DynamoDB emulators: the same code path as production, minus the gateway.
 */

const ROOT_KEY = 'lambda-root-key-0123456789abcdef';

const event = (
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; query?: string } = {},
): APIGatewayProxyEventV2 => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: path,
  rawQueryString: options.query ?? '',
  headers: {
    host: 'abc123.execute-api.us-east-1.amazonaws.com',
    authorization: `Bearer ${ROOT_KEY}`,
    ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
    ...options.headers,
  },
  requestContext: {
    accountId: '123456789012',
    apiId: 'abc123',
    domainName: 'abc123.execute-api.us-east-1.amazonaws.com',
    domainPrefix: 'abc123',
    http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'vitest' },
    requestId: `req-${Math.random().toString(36).slice(2)}`,
    routeKey: '$default',
    stage: '$default',
    time: '30/Nov/2026:08:00:00 +0000',
    timeEpoch: 1_795_000_000_000,
  },
  body: options.body === undefined ? undefined : JSON.stringify(options.body),
  isBase64Encoded: false,
});

const context = { awsRequestId: 'ctx', functionName: 'hefesto-api' } as Context;

describe.skipIf(!hasAwsEmulators())(
  'Lambda handler with API Gateway v2 events on the emulators',
  () => {
    let bucket: TestResource;
    let table: TestResource;
    let invoke: (
      e: APIGatewayProxyEventV2,
    ) => Promise<APIGatewayProxyResult & { json: () => unknown }>;

    beforeAll(async () => {
      bucket = await createTestBucket();
      table = await createTestTable();
      Object.assign(process.env, {
        HEFESTO_BUCKET: bucket.name,
        HEFESTO_TABLE: table.name,
        HEFESTO_API_KEY: ROOT_KEY,
        HEFESTO_S3_FORCE_PATH_STYLE: 'true',
        HEFESTO_LOG_LEVEL: 'silent',
      });
      const { handler } = await import('../../functions/api.js');
      invoke = async (e) => {
        const res = (await handler(e as never, context)) as APIGatewayProxyResult;
        return { ...res, json: () => JSON.parse(res.body) };
      };
    });
    afterAll(async () => {
      await bucket?.cleanup();
      await table?.cleanup();
    });

    it('appends, replays by Idempotency-Key, reads and verifies', async () => {
      const body = {
        events: [
          { type: 'observation', payload: { text: 'hello' } },
          { type: 'decision', payload: { go: true } },
        ],
      };
      const headers = { 'idempotency-key': '"lambda-1"' };
      const first = await invoke(event('POST', '/v1/streams/agent-7/events', { body, headers }));
      expect(first.statusCode).toBe(201);
      expect(first.json()).toMatchObject({ firstSeq: 1, lastSeq: 2 });

      const replay = await invoke(event('POST', '/v1/streams/agent-7/events', { body, headers }));
      expect(replay.statusCode).toBe(201);
      expect(replay.json()).toEqual(first.json());

      const other = await invoke(
        event('POST', '/v1/streams/agent-7/events', {
          body: { events: [{ type: 'x', payload: 1 }] },
          headers,
        }),
      );
      expect(other.statusCode).toBe(422);
      expect(other.headers?.['content-type']).toContain('application/problem+json');
      expect(other.json()).toMatchObject({ code: 'ErrIdempotencyKeyReused' });

      const stream = await invoke(event('GET', '/v1/streams/agent-7'));
      expect(stream.json()).toMatchObject({ streamId: 'agent-7', seq: 2 });

      const events = await invoke(
        event('GET', '/v1/streams/agent-7/events', { query: 'from=2&limit=5' }),
      );
      expect(events.json()).toMatchObject({
        events: [{ seq: 2, type: 'decision', payload: { go: true } }],
      });

      const verify = await invoke(event('GET', '/v1/streams/agent-7/verify'));
      expect(verify.json()).toMatchObject({ ok: true, seq: 2 });
    });

    it('refuses a missing key and a stale expectedSeq with problem+json', async () => {
      const anonymous = event('GET', '/v1/streams/agent-7');
      anonymous.headers.authorization = undefined;
      expect((await invoke(anonymous)).statusCode).toBe(401);
      const stale = await invoke(
        event('POST', '/v1/streams/agent-8/events', {
          body: { events: [{ type: 'a', payload: {} }], expectedSeq: 5 },
        }),
      );
      expect(stale.statusCode).toBe(409);
      expect(stale.json()).toMatchObject({ code: 'ErrSeqConflict' });
    });
  },
);
