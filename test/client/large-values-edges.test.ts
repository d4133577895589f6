import { describe, expect, it } from 'vitest';
import { HefestoClient } from '../../shared/client/client.js';
import { HefestoApiError, ValueTooLargeError } from '../../shared/client/errors.js';
import { stateDigestAfter } from '../../shared/client/set-value.js';
import type { Json } from '../../shared/client/types.js';
import { emptyStateDigest } from '../../shared/domain/state-digest.js';
import { chunksOfValue } from '../../shared/domain/state-v2/index.js';
import { MAX_UPLOAD_BYTES } from '../../shared/state/values.js';
import { TEN_MIB } from '../support/large-values.js';
import { serverForSuite } from '../support/server-suite.js';

/**
 * Large values through the client SDK, beyond the per-store suite (large-values.test.ts):
 * against the embedded server over real sockets, and what the client refuses by itself.
 */

const ROOT = 'large-values-root-key-0123456789abcdef';
const EMPTY = emptyStateDigest(2);

describe('large values by the client against the embedded server over HTTP', () => {
  const server = serverForSuite('hefesto-large-', ROOT);

  it('sets a 10 MiB value over real sockets and reads it back, whole, by page and by path', async () => {
    const sizes: Array<{ method: string; bytes: number }> = [];
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      const body = init?.body as Uint8Array | string | undefined;
      sizes.push({ method: init?.method ?? 'GET', bytes: body?.length ?? 0 });
      return fetch(input, init);
    }) as typeof fetch;
    const root = new HefestoClient({ baseUrl: server.url, apiKey: ROOT });
    const { key } = await root.createKey({ tenant: 'acme', scopes: ['read', 'write'] });
    const acme = new HefestoClient({ baseUrl: server.url, apiKey: key, fetch: counting });
    const { ref, stateDigest } = await acme.setValue('doc', '/doc', TEN_MIB, {
      baseDigest: EMPTY,
      baseState: {},
      label: 'big',
    });
    const uploads = sizes.filter((s) => s.method === 'PUT');
    expect(uploads.length).toBe(chunksOfValue(TEN_MIB).chunks.length);
    expect(Math.max(...uploads.map((u) => u.bytes))).toBeLessThanOrEqual(MAX_UPLOAD_BYTES);
    expect(sizes.filter((s) => s.method === 'POST').map((s) => s.bytes < 1024)).toEqual([true]);
    expect(stateDigest).toBe(stateDigestAfter({}, [{ op: 'set', path: '/doc', value: TEN_MIB }]));
    expect(await acme.readValue(ref)).toEqual(TEN_MIB);
    let items = 0;
    for await (const page of acme.valuePages(ref, { concurrency: 2 })) items += page.length;
    expect(items).toBe((TEN_MIB as string[]).length);
    expect((await acme.getValue('doc', '/doc/5000')).value).toBe((TEN_MIB as string[])[5000]);
  }, 120_000);
});

describe('large values refused by the client before any request', () => {
  let requests = 0;
  const client = new HefestoClient({
    baseUrl: 'http://hefesto.test',
    apiKey: 'unused',
    fetch: (async () => {
      requests++;
      throw new Error('no request may be sent');
    }) as typeof fetch,
  });

  it("refuses a value over the server's default 64 MiB, naming the limit", async () => {
    const over = 'x'.repeat(64 * 1024 * 1024); // 64 MiB + its two quotes
    const refused = await client.putValue(over).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValueTooLargeError);
    expect(refused).toMatchObject({ size: 64 * 1024 * 1024 + 2, limit: 64 * 1024 * 1024 });
    expect((refused as Error).message).toContain(`at most ${64 * 1024 * 1024} bytes`);
    expect(requests).toBe(0);
  }, 60_000);

  it('refuses a value that is not JSON with ErrInvalidInput', async () => {
    for (const value of [{ a: Number.NaN }, { b: undefined }] as unknown as Json[]) {
      await expect(client.putValue(value)).rejects.toMatchObject({ code: 'ErrInvalidInput' });
      await expect(
        client.setValue('s', '/v', value, { baseDigest: EMPTY, baseState: {} }),
      ).rejects.toBeInstanceOf(HefestoApiError);
    }
    expect(requests).toBe(0);
  });
});

describe('chunk uploads the server does not confirm', () => {
  it('fails the upload, and sends no checkpoint, when an answer names another chunk', async () => {
    const methods: string[] = [];
    const liar = (async (_input: string | URL | Request, init?: RequestInit) => {
      methods.push(init?.method ?? 'GET');
      const body = JSON.stringify({ hash: 'b'.repeat(64), size: 1 });
      return new Response(body, { status: 201, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const client = new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: 'k', fetch: liar });
    const value = { text: 'q'.repeat(2 * 1024 * 1024) };
    await expect(
      client.setValue('s', '/v', value, { baseDigest: EMPTY, baseState: {} }),
    ).rejects.toMatchObject({ code: 'ErrInternal' });
    expect(methods.length).toBeGreaterThan(0);
    expect(methods.every((m) => m === 'PUT')).toBe(true);
  });
});
