import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, events, type Harness, STORE_FACTORIES } from './harness.js';

/**
 * The JSON body guard over a real socket (the embedded server's adapter, @hono/node-server):
 * a body with a declared Content-Length is read straight from the connection, a chunked one
 * through the streamed limit, and both limits hold.
 */
const LIMITS = { maxEvents: 3, maxPayloadBytes: 64, maxBodyBytes: 1024 };

interface Answer {
  status: number;
  body: string;
}

describe('the JSON body over a socket', () => {
  let h: Harness;
  let key: string;
  let server: Server;
  let port: number;
  beforeEach(async () => {
    h = createHarness(STORE_FACTORIES[0] as (typeof STORE_FACTORIES)[number], { limits: LIMITS });
    key = await h.newKey('acme');
    server = createAdaptorServer({ fetch: h.app.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
    h.close();
  });

  /** POSTs `chunks` (chunked unless `length` is given); `length` may differ from the body. */
  const post = (chunks: string[], headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(
        {
          port,
          host: '127.0.0.1',
          method: 'POST',
          path: '/v1/streams/run-1/events',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            ...headers,
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      for (const chunk of chunks) req.write(chunk);
      req.end();
    });

  it('appends a body sent with its Content-Length', async () => {
    const body = JSON.stringify({ events: events(2) });
    const res = await post([body], { 'content-length': String(Buffer.byteLength(body)) });
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body)).toMatchObject({ firstSeq: 1, lastSeq: 2 });
  });

  it('appends a chunked body under the limit', async () => {
    const body = JSON.stringify({ events: events(1) });
    const res = await post([body.slice(0, 10), body.slice(10)]);
    expect(res.status).toBe(201);
  });

  it('refuses a chunked body over the limit (413) and writes nothing', async () => {
    const body = JSON.stringify({ events: events(1), pad: 'z'.repeat(LIMITS.maxBodyBytes) });
    const res = await post([body.slice(0, 100), body.slice(100)]);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ code: 'ErrPayloadTooLarge' });
    expect(await h.headSeq(key, 'run-1')).toBeUndefined();
  });

  it('refuses a declared Content-Length over the limit (413) and writes nothing', async () => {
    const body = JSON.stringify({ events: events(1), pad: 'z'.repeat(LIMITS.maxBodyBytes) });
    const res = await post([body], { 'content-length': String(Buffer.byteLength(body)) });
    expect(res.status).toBe(413);
    expect(await h.headSeq(key, 'run-1')).toBeUndefined();
  });

  it('refuses a body that is not JSON (400), and one nested too deep (400)', async () => {
    const bad = '{"events": [';
    expect((await post([bad], { 'content-length': String(bad.length) })).status).toBe(400);
    const deep = `{"events":[{"type":"o","payload":${'['.repeat(40)}${']'.repeat(40)}}]}`;
    expect((await post([deep], { 'content-length': String(deep.length) })).status).toBe(400);
    expect(await h.headSeq(key, 'run-1')).toBeUndefined();
  });

  it('reads a body with a byte-order mark as its JSON (as the Web Request does)', async () => {
    const body = `\uFEFF${JSON.stringify({ events: events(1) })}`;
    const res = await post([body], { 'content-length': String(Buffer.byteLength(body)) });
    expect(res.status).toBe(201);
  });
});
