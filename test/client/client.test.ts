import { beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { ClientVerificationError, HefestoApiError } from '../../shared/client/errors.js';
import { emptyStateDigest } from '../../shared/domain/state-digest.js';
import { digestV2 } from '../../shared/domain/state-v2/index.js';
import { serverForSuite } from '../support/server-suite.js';

/** The client SDK against the embedded server over real HTTP. */

const ROOT = 'client-test-root-key-0123456789';

describe('HefestoClient against the embedded server', () => {
  const server = serverForSuite('hefesto-client-', ROOT);
  const client = (options: Partial<ConstructorParameters<typeof HefestoClient>[0]> = {}) =>
    new HefestoClient({ baseUrl: server.url, apiKey: ROOT, sleep: async () => {}, ...options });

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

describe('HefestoClient reads of one value, proven (state digest v2)', () => {
  const server = serverForSuite('hefesto-client-proof-', ROOT);
  const client = (fetchImpl?: typeof fetch) =>
    new HefestoClient({
      baseUrl: server.url,
      apiKey: ROOT,
      sleep: async () => {},
      verify: true,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
  /** A server answer to proof reads edited on the way (a lying or compromised server). */
  const tampering =
    (edit: (body: { value: unknown; proof: { value: unknown; nodes: string[] } }) => void) =>
    async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(input, init);
      if (!String(input).includes('proof=true')) return res;
      const body = (await res.json()) as Parameters<typeof edit>[0];
      edit(body);
      return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
    };
  const LIST = Array.from({ length: 200 }, (_, i) => `item ${i}`);

  beforeAll(async () => {
    const c = client();
    const one = await c.checkpoint('p1', {
      ops: [{ op: 'set', path: '/list', value: LIST }],
      baseDigest: emptyStateDigest(2),
    });
    await c.append('p1', [{ type: 'note', payload: {} }]);
    await c.checkpoint('p1', {
      ops: [{ op: 'set', path: '/list/65', value: 'edited' }],
      baseDigest: one.stateDigest,
    });
  });

  it('checks the value against the digest the verified chain records, at the head or a checkpoint', async () => {
    const c = client();
    expect((await c.getStream('p1')).digestVersion).toBe(2);
    expect(await c.getVerifiedValue('p1', '/list/65')).toBe('edited');
    expect(await c.getVerifiedValue('p1', '/list/65', { at: 1 })).toBe('item 65');
    expect((await c.getValue('p1', '/list/199')).value).toBe('item 199');
    // The whole state is checked with the stream's version too (verify: true).
    const state = await c.getState('p1');
    expect(state).toMatchObject({ digestVersion: 2, stateDigest: digestV2(state.state) });
    // seq 2 is a note: it records no state, so there is nothing to prove against.
    await expect(c.getVerifiedValue('p1', '/list/0', { at: 2 })).rejects.toBeInstanceOf(
      ClientVerificationError,
    );
  });

  it('refuses a tampered value or proof', async () => {
    const edits = [
      (b: { value: unknown; proof: { value: unknown } }) => {
        b.value = 'forged';
        b.proof.value = 'forged';
      },
      (b: { proof: { nodes: string[] } }) => {
        const node = Buffer.from(b.proof.nodes[0] as string, 'base64');
        node[20] = (node[20] ?? 0) ^ 1;
        b.proof.nodes[0] = node.toString('base64');
      },
      (b: { proof: { nodes: string[] } }) => {
        b.proof.nodes.pop();
      },
    ];
    for (const edit of edits) {
      await expect(
        client(tampering(edit as never) as typeof fetch).getVerifiedValue('p1', '/list/65'),
      ).rejects.toBeInstanceOf(ClientVerificationError);
    }
  });
});
