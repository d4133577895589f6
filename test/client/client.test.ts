import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { HefestoClient } from '../../shared/client/client.js';
import { ClientVerificationError, HefestoApiError } from '../../shared/client/errors.js';

/** The client SDK against the embedded server over real HTTP. */

const ROOT = 'client-test-root-key-0123456789';

describe('HefestoClient against the embedded server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-client-'));
  let server: ServerProcess;
  const client = (options: Partial<ConstructorParameters<typeof HefestoClient>[0]> = {}) =>
    new HefestoClient({ baseUrl: server.url, apiKey: ROOT, sleep: async () => {}, ...options });

  beforeAll(async () => {
    server = await startServer({ HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT });
  });
  afterAll(async () => {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('appends, reads with verification, and verifies locally', async () => {
    const c = client({ verify: true });
    const a = await c.append('s1', [{ type: 'observation', payload: { n: 1 } }]);
    await c.append('s1', [
      { type: 'decision', payload: { n: 2 } },
      { type: 'observation', payload: { n: 3 } },
    ]);
    expect(a).toMatchObject({ firstSeq: 1, lastSeq: 1, replayed: false });
    const page = await c.readEvents('s1', { from: 2 });
    expect(page.events.map((e) => e.seq)).toEqual([2, 3]);
    const typed = await c.readEvents('s1', { type: 'observation' });
    expect(typed.events.map((e) => e.seq)).toEqual([1, 3]);
    expect(await c.verifyLocally('s1')).toMatchObject({ ok: true, seq: 3 });
    expect(await c.verify('s1')).toMatchObject({ ok: true, seq: 3 });
  });

  it('retries a write whose reply was lost with the same Idempotency-Key: applied once', async () => {
    let calls = 0;
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      calls++;
      if (calls === 1) throw new TypeError('fetch failed: socket hang up'); // the write happened
      return res;
    };
    const c = client({ fetch: lossy });
    const result = await c.append('s2', [{ type: 'observation', payload: 'once' }]);
    expect(calls).toBe(2);
    expect(result).toMatchObject({ firstSeq: 1, replayed: true });
    expect((await c.getStream('s2')).seq).toBe(1);
  });

  it('retries 503 and 429 answers, then succeeds', async () => {
    let calls = 0;
    const flaky: typeof fetch = async (input, init) => {
      calls++;
      if (calls === 1)
        return new Response('{"code":"ErrUnavailable","status":503}', {
          status: 503,
          headers: { 'retry-after': '0' },
        });
      if (calls === 2) return new Response('slow down', { status: 429 });
      return fetch(input, init);
    };
    const result = await client({ fetch: flaky }).append('s3', [
      { type: 'observation', payload: 1 },
    ]);
    expect(calls).toBe(3);
    expect(result.lastSeq).toBe(1);
  });

  it('turns problem+json into typed errors with the server code', async () => {
    const c = client();
    await c.append('s4', [{ type: 'observation', payload: 1 }]);
    const err = await c
      .append('s4', [{ type: 'observation', payload: 2 }], { expectedSeq: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HefestoApiError);
    expect(err).toMatchObject({ code: 'ErrSeqConflict', status: 409 });
    await expect(c.getStream('nope')).rejects.toMatchObject({
      code: 'ErrStreamNotFound',
      status: 404,
    });
    await expect(
      new HefestoClient({ baseUrl: server.url, apiKey: 'wrong-key-000000000000' }).getStream('s4'),
    ).rejects.toMatchObject({ code: 'ErrUnauthorized' });
  });

  it('catches a server that returns a tampered event', async () => {
    await client().append('s5', [
      { type: 'observation', payload: { amount: 10 } },
      { type: 'observation', payload: { amount: 20 } },
    ]);
    const tampering: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!String(input).includes('/events')) return res;
      const text = (await res.text()).replace('"amount":20', '"amount":2000');
      return new Response(text, { status: res.status, headers: res.headers });
    };
    const honest = client({ verify: true });
    expect((await honest.readEvents('s5')).events).toHaveLength(2);
    const fooled = client({ verify: true, fetch: tampering });
    const err = await fooled.readEvents('s5').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientVerificationError);
    expect((err as ClientVerificationError).firstBadSeq).toBe(2);
    expect(await fooled.verifyLocally('s5')).toMatchObject({ ok: false, firstBadSeq: 2 });
    // Without verification the forged value would have been believed.
    const trusting = client({ fetch: tampering });
    expect((await trusting.readEvents('s5')).events[1]?.payload).toEqual({ amount: 2000 });
  });
});
