import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbedded } from '../../packages/embedded/src/index.js';
import type { EmbeddedEngine } from '../../packages/embedded/src/types.js';
import { SIGNING_KEY_FILE } from '../../shared/adapters/local/signing-key-file.js';
import { HefestoClient } from '../../shared/client/client.js';
import { HefestoApiError } from '../../shared/client/errors.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { DataDirInUseError } from '../../shared/domain/errors.js';
import { SigningKeyMissingError } from '../../shared/keys/signing-keys.js';

/**
 * The in-process engine (`@hefesto/embedded`): a HefestoClient answered by the embedded
 * server's app in this process, on a data directory of its own per test.
 */

let dir: string;
const open: EmbeddedEngine[] = [];
const engine = async (options: Parameters<typeof openEmbedded>[0] = {}) => {
  const opened = await openEmbedded({ dataDir: dir, env: {}, ...options });
  open.push(opened);
  return opened;
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-engine-'));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** GET /v1/whoami with `apiKey` through `fetcher` (the engine's handler or a socket). */
const whoami = async (fetcher: typeof fetch, baseUrl: string, apiKey: string) => {
  const res = await fetcher(`${baseUrl}/v1/whoami`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

const rejection = async (promise: Promise<unknown>): Promise<Error> => {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('it resolved');
};

describe('openEmbedded', () => {
  describe('the client', () => {
    it('appends, checkpoints and reads with verified receipts, with no socket', async () => {
      const { client } = await engine({
        client: { verify: true, trustStore: new MemoryTrustStore() },
      });
      expect(client).toBeInstanceOf(HefestoClient);
      const appended = await client.append('run-1', [{ type: 'observation', payload: { n: 1 } }]);
      expect(appended).toMatchObject({ firstSeq: 1, lastSeq: 1, replayed: false });
      // A signed tree head per append, checked against the engine's published key.
      expect(appended.treeHead).toMatchObject({ streamId: 'run-1', treeSize: 1, alg: 'EdDSA' });
      const checkpoint = await client.checkpoint('run-1', {
        baseDigest: (await client.getStream('run-1')).stateDigest,
        ops: [{ op: 'set', path: '/turn', value: 1 }],
      });
      expect(checkpoint.seq).toBe(2);
      expect((await client.getState('run-1')).state).toEqual({ turn: 1 });
      expect((await client.readEvents('run-1')).events.map((e) => e.seq)).toEqual([1, 2]);
      expect(await client.verifyLocally('run-1')).toMatchObject({ ok: true, seq: 2 });
    });

    it("answers the server's errors: an expectedSeq conflict is 409 ErrSeqConflict", async () => {
      const { client } = await engine();
      await client.append('run-1', [{ type: 'note', payload: 1 }]);
      const err = await rejection(
        client.append('run-1', [{ type: 'note', payload: 2 }], { expectedSeq: 0 }),
      );
      expect(err).toBeInstanceOf(HefestoApiError);
      expect(err).toMatchObject({ code: 'ErrSeqConflict', status: 409 });
      expect((await client.getStream('run-1')).seq).toBe(1);
    });

    it('validates input on the HTTP path: a bad stream id is 400 ErrInvalidInput', async () => {
      const { client } = await engine();
      const err = await rejection(client.append('bad id!', [{ type: 'note', payload: 1 }]));
      expect(err).toMatchObject({ code: 'ErrInvalidInput', status: 400 });
    });
  });

  describe('the principal', () => {
    it("is the tenant and scopes asked for: a read-only principal's write is 403", async () => {
      const writer = await engine({ principal: { tenant: 'acme' } });
      await writer.client.append('run-1', [{ type: 'note', payload: 'acme' }]);
      expect((await whoami(writer.fetch, writer.baseUrl, writer.apiKey)).body).toMatchObject({
        tenant: 'acme',
        scopes: ['read', 'write', 'admin'],
        operator: false,
      });
      await writer.close();
      const reader = await engine({ principal: { tenant: 'acme', scopes: ['read'] } });
      expect((await reader.client.getStream('run-1')).seq).toBe(1);
      const err = await rejection(reader.client.append('run-1', [{ type: 'note', payload: 2 }]));
      expect(err).toMatchObject({ code: 'ErrForbidden', status: 403 });
      // Another tenant's principal does not see acme's stream.
      await reader.close();
      const other = await engine({ principal: { tenant: 'other' } });
      expect(await rejection(other.client.getStream('run-1'))).toMatchObject({
        code: 'ErrStreamNotFound',
      });
    });

    it('has a key valid only while the engine is open, stored nowhere', async () => {
      const first = await engine({ serve: { port: 0 } });
      // The loopback listener accepts the process key like any key (the same app).
      expect(await whoami(fetch, first.served?.url ?? '', first.apiKey)).toMatchObject({
        status: 200,
        body: { tenant: 'default', operator: false },
      });
      await first.close();
      const second = await engine({ serve: { port: 0 } });
      expect(await whoami(fetch, second.served?.url ?? '', first.apiKey)).toMatchObject({
        status: 401,
        body: { code: 'ErrUnauthorized' },
      });
      // Nothing of it reached the record store: the new engine knows only its own key.
      expect((await whoami(second.fetch, second.baseUrl, second.apiKey)).status).toBe(200);
    });
  });

  describe('the data directory', () => {
    it('is held by one engine: a second open is ErrDataDirInUse naming this pid', async () => {
      await engine();
      const err = await rejection(openEmbedded({ dataDir: dir, env: {} }));
      expect(err).toBeInstanceOf(DataDirInUseError);
      expect(err).toMatchObject({ code: 'ErrDataDirInUse', dir, pid: process.pid });
    });

    it('is released when the open fails after taking it (a lost signing key)', async () => {
      const first = await engine();
      await first.client.append('run-1', [{ type: 'note', payload: 1 }]);
      await first.close();
      rmSync(join(dir, SIGNING_KEY_FILE));
      const err = await rejection(openEmbedded({ dataDir: dir, env: {} }));
      expect(err).toBeInstanceOf(SigningKeyMissingError);
      // Not ErrDataDirInUse: the failed open closed its stores and released the lock.
      expect(await rejection(openEmbedded({ dataDir: dir, env: {} }))).toBeInstanceOf(
        SigningKeyMissingError,
      );
    });

    it('opens again after close(), with what was written', async () => {
      const first = await engine();
      await first.client.append('run-1', [{ type: 'note', payload: 1 }]);
      await first.close();
      const second = await engine();
      expect((await second.client.getStream('run-1')).seq).toBe(1);
    });
  });

  describe('close()', () => {
    it('answers every request in flight before it closes, then refuses new ones', async () => {
      const first = await engine();
      await first.client.append('run-1', [{ type: 'note', payload: 0 }]);
      // Each request reaches the handler synchronously: all 16 are in flight at close().
      const appends = Array.from({ length: 16 }, (_, i) =>
        first.fetch(`${first.baseUrl}/v1/streams/run-1/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${first.apiKey}`,
            'content-type': 'application/json',
            'idempotency-key': `"close-${i}"`,
          },
          body: JSON.stringify({ events: [{ type: 'note', payload: i + 1 }] }),
        }),
      );
      await first.close();
      const answers = await Promise.all(appends);
      expect(answers.map((r) => r.status)).toEqual(Array(16).fill(201));
      const late = await first.fetch(`${first.baseUrl}/v1/streams/run-1`, {
        headers: { authorization: `Bearer ${first.apiKey}` },
      });
      expect(late.status).toBe(503);
      expect(await late.json()).toMatchObject({ code: 'ErrUnavailable' });
      // Durable: the next open reads all 17.
      const second = await engine();
      expect((await second.client.getStream('run-1')).seq).toBe(17);
    });
  });

  describe('serve', () => {
    it('refuses a busy port with a message saying so, and releases the data directory', async () => {
      const other = mkdtempSync(join(tmpdir(), 'hefesto-engine-port-'));
      try {
        const first = await openEmbedded({ dataDir: other, env: {}, serve: { port: 0 } });
        open.push(first);
        const port = Number(new URL(first.served?.url ?? '').port);
        const err = await rejection(engine({ serve: { port } }));
        expect(err.message).toContain(`port ${port} is already in use`);
        expect((await engine()).served).toBeUndefined();
      } finally {
        await Promise.all(open.splice(0).map((e) => e.close()));
        rmSync(other, { recursive: true, force: true });
      }
    });

    it('serves the same data directory on loopback, with the first operator key', async () => {
      const { client, served } = await engine({ serve: { port: 0 } });
      await client.append('run-1', [{ type: 'note', payload: 'in process' }]);
      expect(served?.url).toMatch(/^http:\/\/localhost:\d+$/);
      expect(served?.firstKey).toMatchObject({
        tenant: 'default',
        scopes: ['read', 'write', 'admin'],
      });
      const http = new HefestoClient({ baseUrl: served?.url ?? '', apiKey: served?.firstKey?.key });
      expect((await http.readEvents('run-1')).events[0]?.payload).toBe('in process');
      expect(
        (await whoami(fetch, served?.url ?? '', served?.firstKey?.key ?? '')).body,
      ).toMatchObject({ operator: true });
      const consolePage = await fetch(`${served?.url}/console`);
      expect(consolePage.status).toBe(200);
    });
  });
});
