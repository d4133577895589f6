import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { createHarness, type Harness, readJson, STORE_FACTORIES } from './harness.js';

/**
 * 409 ErrDivergenceDetected for a stale baseDigest carries the stream's current seq and
 * stateDigest, so a raw-HTTP client retries on them without another GET.
 */

interface Divergence {
  status: number;
  code: string;
  seq: number;
  stateDigest: string;
}
interface Head {
  seq: number;
  stateDigest: string;
}

describe.each(STORE_FACTORIES)('divergence problems on $name stores', (factory) => {
  let h: Harness;
  let keys: Record<string, string>;
  const checkpoint = (tenant: string, stream: string, value: unknown, baseDigest: string) =>
    h.request(`/v1/streams/${stream}/checkpoints`, {
      key: keys[tenant],
      body: { ops: [{ op: 'set', path: '/v', value }], baseDigest },
    });
  const head = (tenant: string, stream: string) =>
    readJson<Head>(h.request(`/v1/streams/${stream}`, { key: keys[tenant] }));

  beforeEach(async () => {
    h = createHarness(factory);
    keys = { acme: await h.newKey('acme'), globex: await h.newKey('globex') };
  });
  afterEach(() => h.close());

  it("answers the stream's own head, per stream and tenant, and a retry on it succeeds", async () => {
    // Same stream id in two tenants plus a second stream: each 409 names its own head.
    for (const [tenant, stream, turns] of [
      ['acme', 'run-1', 3],
      ['globex', 'run-1', 1],
      ['acme', 'run-2', 2],
    ] as const) {
      let digest = EMPTY_STATE_DIGEST_V2;
      for (let t = 0; t < turns; t++) {
        digest = (await readJson<Head>(checkpoint(tenant, stream, `${tenant}${t}`, digest)))
          .stateDigest;
      }
      await h.append(keys[tenant] ?? '', stream, [{ type: 'note', payload: 1 }]);

      const stale = await checkpoint(tenant, stream, 'late', EMPTY_STATE_DIGEST_V2);

      expect(stale.status).toBe(409);
      const problem = await readJson<Divergence>(stale);
      const now = await head(tenant, stream);
      expect(problem).toMatchObject({
        code: 'ErrDivergenceDetected',
        seq: now.seq,
        stateDigest: now.stateDigest,
      });
      expect(problem.stateDigest).toBe(digest);
      const retry = await checkpoint(tenant, stream, 'late', problem.stateDigest);
      expect(retry.status).toBe(201);
    }
  });

  it('names the winner of a race, for every checkpoint that lost it', async () => {
    await checkpoint('acme', 'race', 0, EMPTY_STATE_DIGEST_V2);
    const base = (await head('acme', 'race')).stateDigest;

    // All read the same head; one commits, the others lose inside the appender's retry or
    // the checkpointer's own check.
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => checkpoint('acme', 'race', i + 1, base)),
    );

    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    const now = await head('acme', 'race');
    for (const lost of answers.filter((r) => r.status !== 201)) {
      expect(lost.status).toBe(409);
      expect(await lost.json()).toMatchObject({
        code: 'ErrDivergenceDetected',
        seq: now.seq,
        stateDigest: now.stateDigest,
      });
    }
  });
});
