import { afterEach, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { ClientVerificationError } from '../../shared/client/errors.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { createHarness, type Harness, STORE_FACTORIES } from '../http/harness.js';

/**
 * A verifying client on a stream sealed at rest (docs/privacy.md, Decision 1): it fetches the
 * stream's commitment key (GET …/keys/commitment, read scope, the key's tenant only) and binds
 * every payload it is shown to the chain, so a server that serves another payload than the one
 * committed is caught; with `bindPayloads: false` it verifies the headers chain without k_c.
 */

const PAYLOAD = { text: 'approve refund', approved: true };

describe.each(STORE_FACTORIES)('the commitment key on $name', (factory) => {
  let h: Harness;
  afterEach(() => h?.close());

  /** A client of the app; `lie` edits what the server answers to a read of the events. */
  const clientOf = (
    key: string,
    o: { tenant?: string; bindPayloads?: boolean; lie?: boolean } = {},
  ) => {
    let keyFetches = 0;
    const client = new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: key,
      tenant: o.tenant ?? 'acme',
      verify: true,
      trustStore: new MemoryTrustStore(),
      ...(o.bindPayloads === undefined ? {} : { bindPayloads: o.bindPayloads }),
      sleep: async () => {},
      fetch: (async (input: string | URL | Request, init?: RequestInit) => {
        const req = new Request(input, init);
        if (new URL(req.url).pathname.endsWith('/keys/commitment')) keyFetches++;
        const res = await h.app.fetch(req);
        if (!o.lie || !/\/events$/.test(new URL(req.url).pathname) || req.method !== 'GET') {
          return res;
        }
        const body = (await res.json()) as { events: Array<{ payload: unknown }> };
        for (const e of body.events) e.payload = { text: 'deny refund', approved: false };
        return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
      }) as typeof globalThis.fetch,
    });
    return { client, fetches: () => keyFetches };
  };

  const sealedStream = async () => {
    h = createHarness(factory, { sealed: true });
    const key = await h.newKey('acme', ['read', 'write']);
    const { client } = clientOf(key);
    await client.append('run-1', [
      { type: 'user.message', payload: PAYLOAD },
      { type: 'user.message', payload: { n: 2 } },
    ]);
    return key;
  };

  it('binds the payloads read to the chain with the stream’s commitment key', async () => {
    const key = await sealedStream();
    const { client, fetches } = clientOf(key);
    const { events } = await client.readEvents('run-1');
    expect(events.map((e) => e.payload)).toEqual([PAYLOAD, { n: 2 }]);
    expect(events[0]).toMatchObject({ format: 2 });
    expect(await client.verifyLocally('run-1')).toMatchObject({ ok: true });
    expect(fetches()).toBe(1); // once per stream
  });

  it('catches a server that serves another payload than the committed one', async () => {
    const key = await sealedStream();
    const { client } = clientOf(key, { lie: true });
    await expect(client.readEvents('run-1')).rejects.toBeInstanceOf(ClientVerificationError);
    expect(await clientOf(key, { lie: true }).client.verifyLocally('run-1')).toMatchObject({
      ok: false,
      code: 'ErrTamperedLedger',
      firstBadSeq: 1,
    });
  });

  it('without k_c verifies the headers chain (bindPayloads: false), and a lie passes unbound', async () => {
    const key = await sealedStream();
    const { client, fetches } = clientOf(key, { bindPayloads: false, lie: true });
    const { events } = await client.readEvents('run-1');
    expect(events).toHaveLength(2);
    expect(await client.verifyLocally('run-1')).toMatchObject({ ok: true });
    expect(fetches()).toBe(0);
  });

  it('verifies a proven session history of a sealed stream, its payload bound with k_c', async () => {
    h = createHarness(factory, { sealed: true });
    const key = await h.newKey('acme', ['read', 'write']);
    const items = [
      { role: 'user', content: 'approve refund' },
      { role: 'user', content: 'two' },
    ];
    await clientOf(key).client.changeHistory('chat-1', { type: 'append_items', items });
    /** A server that adds a field to the payload of the event the history is proven by. */
    const editing = (o: { bindPayloads?: boolean } = {}) => {
      const proofFetch = (async (input: string | URL | Request, init?: RequestInit) => {
        const req = new Request(input, init);
        const res = await h.app.fetch(req);
        if (!new URL(req.url).pathname.endsWith('/history') || req.method !== 'GET') return res;
        const body = (await res.json()) as { proof: { event: { payload: object } } };
        body.proof.event.payload = { ...body.proof.event.payload, forged: true };
        return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
      }) as typeof globalThis.fetch;
      return new HefestoClient({
        baseUrl: 'http://hefesto.test',
        apiKey: key,
        tenant: 'acme',
        verify: true,
        trustStore: new MemoryTrustStore(),
        ...o,
        sleep: async () => {},
        fetch: proofFetch,
      }).getHistory('chat-1', { proof: true });
    };
    for (const o of [{}, { bindPayloads: false }]) {
      const { client } = clientOf(key, o);
      expect((await client.getHistory('chat-1', { proof: true })).items).toEqual(items);
      expect((await client.getHistory('chat-1', { proof: true, limit: 1 })).items).toEqual([
        items[1],
      ]);
    }
    // bound with k_c, an edited payload is caught; headers only, it is the server's word
    await expect(editing()).rejects.toBeInstanceOf(ClientVerificationError);
    expect((await editing({ bindPayloads: false })).items).toEqual(items);
  });

  it('serves k_c to the read scope of the stream’s tenant only; a clear stream has none', async () => {
    await sealedStream();
    const reader = await h.newKey('acme', ['read']);
    const ok = await h.request('/v1/streams/run-1/keys/commitment', { key: reader });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { commitKey: string; keyId: string; streamId: string };
    expect(Buffer.from(body.commitKey, 'base64url')).toHaveLength(32);
    expect(body.streamId).toBe('run-1');
    const other = await h.newKey('other', ['read', 'write']);
    const theirs = await h.request('/v1/streams/run-1/keys/commitment', { key: other });
    expect(theirs.status).toBe(404);
    expect(JSON.stringify(await theirs.json())).not.toContain(body.commitKey);
    const writer = await h.newKey('acme', ['write']);
    expect((await h.request('/v1/streams/run-1/keys/commitment', { key: writer })).status).toBe(
      403,
    );
    // a stream in the clear (written before the key store): no key
    const plain = createHarness(factory);
    try {
      const k = await plain.newKey('acme', ['read', 'write']);
      expect(
        (
          await plain.request('/v1/streams/run-9/events', {
            key: k,
            body: { events: [{ type: 'x', payload: {} }] },
          })
        ).status,
      ).toBe(201);
      const none = await plain.request('/v1/streams/run-9/keys/commitment', { key: k });
      expect(none.status).toBe(404);
      expect(((await none.json()) as { code: string }).code).toBe('ErrNotFound');
    } finally {
      plain.close();
    }
  });
});
