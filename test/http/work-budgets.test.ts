import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeltaOp } from '../../shared/domain/state.js';
import { EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { dedupBomb, SIXTY_FOUR_MIB_BOMB } from '../support/dedup-bomb.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

/**
 * Issue 21 item 3 over HTTP: the dedup bomb (64 MiB of `[[{},...],...]` in 4 chunks) named by
 * a checkpoint is 413 ErrPayloadTooLarge naming the budget, every time, and the server goes on
 * answering; a read key's GET /state of a stream whose state is over the read budget is
 * refused the same way (docs/state-v2.md, "Limits").
 */

vi.setConfig({ testTimeout: 120_000 });

type BudgetProblem = ProblemBody & { budget: string; limit: number; needed: number };

describe.each(STORE_FACTORIES)('work budgets over HTTP on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const upload = async (chunks: Array<{ hash: string; bytes: Uint8Array }>) => {
    for (const c of chunks) {
      const res = await h.app.request(`/v1/chunks/${c.hash}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
        body: c.bytes,
      });
      expect(res.status).toBe(201);
    }
  };
  const setRef = (stream: string, ref: { hash: string; size: number }) =>
    h.request(`/v1/streams/${stream}/checkpoints`, {
      key,
      body: { ops: [{ op: 'set', path: '/v', ref }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });

  afterEach(() => h.close());

  describe('with the default budget', () => {
    beforeEach(async () => {
      h = createHarness(factory);
      key = await h.newKey('acme');
    });

    it('answers the dedup bomb with 413 twice and keeps serving', async () => {
      const bomb = SIXTY_FOUR_MIB_BOMB();
      await upload(bomb.chunks);
      for (let i = 0; i < 2; i++) {
        const res = await setRef('bomb', bomb.ref);
        expect(res.status).toBe(413);
        const problem = await read<BudgetProblem>(res);
        expect(problem).toMatchObject({
          code: 'ErrPayloadTooLarge',
          budget: 'stateNodes',
          limit: h.ledger.states.budget.maxNodes,
        });
        expect(problem.needed).toBeGreaterThan(problem.limit);
        expect((await h.request('/healthz')).status).toBe(200);
      }
      expect(await h.headSeq(key, 'bomb')).toBeUndefined();
      // Other requests of the same key are served as before.
      const fine = dedupBomb(2_000, '[{},{}]');
      await upload(fine.chunks);
      expect((await setRef('fine', fine.ref)).status).toBe(201);
      const state = await read<{ state: { v: unknown[] } }>(
        h.request('/v1/streams/fine/state', { key }),
      );
      expect(state.state.v).toHaveLength(2_000);
    });
  });

  describe('with a read budget smaller than a stream written before', () => {
    beforeEach(async () => {
      h = createHarness(factory, {
        ledger: { budget: { maxNodes: 50_000, maxBytes: 64 * 1024 * 1024 } },
      });
      key = await h.newKey('acme');
    });

    it("refuses a read key's GET /state of that stream with 413 naming the budget", async () => {
      // Written by a process with the default budget (or before the budget existed).
      const writer = new Ledger({ objects: h.objects, records: h.records, clock: { now: h.now } });
      const value = dedupBomb(60_000, '[{},{}]'); // 180,001 JSON values in 4 chunks
      for (const c of value.chunks) await writer.states.values.putChunk('acme', c.hash, c.bytes);
      await writer.checkpoints.checkpoint({
        tenant: 'acme',
        stream: 'wide',
        ops: [{ op: 'set', path: '/v', ref: value.ref } as unknown as DeltaOp],
        baseDigest: EMPTY_STATE_DIGEST_V2,
      });
      const reader = await h.newKey('acme', ['read']);
      const res = await h.request('/v1/streams/wide/state', { key: reader });
      expect(res.status).toBe(413);
      expect(await read<BudgetProblem>(res)).toMatchObject({
        code: 'ErrPayloadTooLarge',
        budget: 'stateNodes',
        limit: 50_000,
      });
      expect((await h.request('/healthz')).status).toBe(200);
      // The stream is still there: its head answers, and smaller streams read whole.
      expect(await h.headSeq(reader, 'wide')).toBe(1);
    });
  });
});
