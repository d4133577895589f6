import { handle } from 'hono/aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, STORE_FACTORIES } from './harness.js';

/** A literal API Gateway HTTP API (payload v2) event, as Lambda receives it. */
const httpApiEvent = (
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) => ({
  version: '2.0',
  routeKey: '$default',
  rawPath: path,
  rawQueryString: '',
  headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com', ...headers },
  requestContext: {
    accountId: '123456789012',
    apiId: 'abc123',
    authentication: null,
    authorizer: {},
    domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
    domainPrefix: 'abc123',
    http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
    requestId: 'req-1',
    routeKey: '$default',
    stage: '$default',
    time: '30/Nov/2026:08:00:00 +0000',
    timeEpoch: 1_796_025_600_000,
  },
  body: body ?? null,
  isBase64Encoded: false,
});

describe.each(STORE_FACTORIES)('the Lambda handler over $name stores', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());

  it('appends from an API Gateway event and answers problems as problem+json', async () => {
    const key = await h.newKey('acme');
    const handler = handle(h.app);

    const created = await handler(
      httpApiEvent(
        'POST',
        '/v1/streams/run-1/events',
        { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        JSON.stringify({ events: [{ type: 'a', payload: { n: 1 } }] }),
      ),
    );
    const refused = await handler(httpApiEvent('GET', '/v1/streams/run-1', {}));

    expect(created.statusCode).toBe(201);
    expect(JSON.parse(created.body)).toMatchObject({ firstSeq: 1, lastSeq: 1 });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers?.['content-type']).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'ErrUnauthorized' });
  });
});
