import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EMPTY_STATE_DIGEST_V2, memoryOf } from '../../shared/domain/state-v2/index.js';
import { MemoryPool } from '../../shared/state/memory-pool.js';
import { dedupBomb } from '../support/dedup-bomb.js';
import { createHarness, type Harness, STORE_FACTORIES } from './harness.js';

/**
 * Issue 21 item 3 over HTTP: concurrent reads of a large state, each within the work budget,
 * together past the process's memory ceiling (memory-pool.ts). The ones past it are answered
 * 503 ErrUnavailable with Retry-After (this pool waits for nothing), the server goes on, and
 * the memory of a state whose response is streaming stays charged until it is sent or the
 * client goes away.
 */

vi.setConfig({ testTimeout: 120_000 });

/** 60,001 JSON values in 4 chunks: about 20 MB materialised (memoryOf). */
const VALUE = dedupBomb(20_000, '[{},{}]');
const ONE = memoryOf({ nodes: 60_002, bytes: VALUE.ref.size + 8 });

describe.each(STORE_FACTORIES)('the memory ceiling over HTTP on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  let memory: MemoryPool;
  beforeEach(async () => {
    memory = new MemoryPool({ capacity: Math.floor(ONE * 1.5), maxWaitMs: 0 });
    h = createHarness(factory, { ledger: { snapshotEvery: 1, memory } });
    key = await h.newKey('acme');
    for (const c of VALUE.chunks) {
      const res = await h.app.request(`/v1/chunks/${c.hash}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
        body: c.bytes,
      });
      expect(res.status).toBe(201);
    }
    const res = await h.request('/v1/streams/big/checkpoints', {
      key,
      body: { ops: [{ op: 'set', path: '/v', ref: VALUE.ref }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });
    expect(res.status).toBe(201);
    await res.arrayBuffer();
  });
  afterEach(() => h.close());

  it('answers the reads past the ceiling 503 with Retry-After, and serves them after', async () => {
    const responses = await Promise.all(
      Array.from({ length: 4 }, () => h.request('/v1/streams/big/state', { key })),
    );
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 503);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(ok.length + refused.length).toBe(4);
    for (const res of refused) {
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await res.json()).toMatchObject({ code: 'ErrUnavailable' });
    }
    // A streaming state keeps its memory until it is read out.
    expect(memory.stats.requests).toBeGreaterThan(0);
    for (const res of ok) {
      const body = (await res.json()) as { state: { v: unknown[] } };
      expect(body.state.v).toHaveLength(20_000);
    }
    expect(memory.stats.requests).toBe(0);
    expect(memory.stats.peak).toBeLessThanOrEqual(memory.capacity);
    expect((await h.request('/healthz')).status).toBe(200);
    const again = await h.request('/v1/streams/big/state', { key });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
  });

  it('gives the memory of a streaming state back when the client goes away', async () => {
    const res = await h.request('/v1/streams/big/state', { key });
    expect(res.status).toBe(200);
    expect(memory.stats.requests).toBeGreaterThan(0);
    const reader = res.body?.getReader();
    await reader?.read();
    await reader?.cancel();
    expect(memory.stats.requests).toBe(0);
  });
});
