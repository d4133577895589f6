import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbedded, type Embedded } from '../../functions/wiring/embedded.js';
import { parseSettings } from '../../shared/config/settings.js';

/**
 * The embedded server caches key lookups (keys.ts, cacheLookups): a key revoked over the API is
 * refused on its very next request, by the same server, with no restart.
 */
const ROOT = 'root-key-for-tests-0123456789abcdef';

describe('key revocation on the embedded server (key lookups cached)', () => {
  let dir: string;
  let embedded: Embedded;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hefesto-key-revocation-'));
    embedded = createEmbedded(
      parseSettings({
        HEFESTO_DATA_DIR: dir,
        HEFESTO_API_KEY: ROOT,
        HEFESTO_COMPACT_INTERVAL_MS: '0',
      }),
    );
    await embedded.ready;
  });
  afterEach(() => {
    embedded.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (key: string, path: string, method = 'GET', body?: unknown) =>
    embedded.fetch(
      new Request(`http://local${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );

  it('refuses a revoked key on its next request after being served from the cache', async () => {
    const created = await call(ROOT, '/v1/keys', 'POST', {
      tenant: 'acme',
      scopes: ['read', 'write'],
    });
    const { id, key } = (await created.json()) as { id: string; key: string };
    const append = { events: [{ type: 'o', payload: { n: 1 } }] };
    expect((await call(key, '/v1/streams/run-1/events', 'POST', append)).status).toBe(201);
    expect((await call(key, '/v1/streams/run-1')).status).toBe(200);

    expect((await call(ROOT, `/v1/keys/${id}`, 'DELETE')).status).toBeLessThan(300);

    expect((await call(key, '/v1/streams/run-1')).status).toBe(401);
    expect((await call(key, '/v1/streams/run-1/events', 'POST', append)).status).toBe(401);
  });
});
