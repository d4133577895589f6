import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * Items over the request limit (a tool's large output) go by reference: uploaded as chunks,
 * named by their hash in the change, set by ref in the delta (so the ledger event stays small)
 * and compared by their v2 hash in a transaction's suffix.
 */

const call: AgentInputItem = {
  type: 'function_call',
  callId: 'c1',
  name: 'fetch_page',
  arguments: '{"url":"https://example.com"}',
  status: 'completed',
};
const output = (text: string): AgentInputItem => ({
  type: 'function_call_result',
  callId: 'c1',
  name: 'fetch_page',
  status: 'completed',
  output: { type: 'text', text },
});
const big = (seed: string) => output(`${seed}:${'x'.repeat(600 * 1024)}`);

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`large items on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory);
    });
    afterAll(() => world.close());

    it('stores a 600 KiB tool output by reference and reads it back whole', async () => {
      const s = world.session('large-1');
      await s.addItems([call, big('a')]);

      expect(await s.getItems()).toEqual([call, big('a')]);
      expect(await s.getItems(1)).toEqual([big('a')]);
      const { events } = await world.client().readEvents('large-1');
      // the delta names the value by reference: the event is small
      expect(JSON.stringify(events[0]?.payload).length).toBeLessThan(4096);
      expect(await s.popItem()).toEqual(big('a'));
      expect(await s.getItems()).toEqual([call]);
    });

    it('compares a large item of a suffix by its hash, and applies a retry once', async () => {
      const s = world.session('large-2');
      await s.addItems([call, big('a')]);
      const tx = {
        operationId: 'turn-1',
        transaction: {
          type: 'replace_suffix' as const,
          expectedSuffix: [big('a')],
          replacement: [big('b')],
        },
      };
      const wrong = {
        operationId: 'turn-2',
        transaction: { ...tx.transaction, expectedSuffix: [big('z')] },
      };

      await expect(s.applyHistoryTransaction(wrong)).rejects.toThrow('suffix no longer matches');
      await s.applyHistoryTransaction(tx);
      await world.session('large-2').applyHistoryTransaction(structuredClone(tx));

      expect(await s.getItems()).toEqual([call, big('b')]);
    });

    it('inline, the same item is over the request limit: 413, nothing written', async () => {
      const s = world.session('large-3', { largeItemBytes: Number.POSITIVE_INFINITY });

      await expect(s.addItems([call, big('a')])).rejects.toMatchObject({
        code: 'ErrPayloadTooLarge',
      });
      expect(await s.getItems()).toEqual([]);
    });
  });
}
