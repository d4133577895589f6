import { type AgentInputItem, UserError } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoSession } from '../../packages/openai-agents/src/index.js';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * HefestoSession and the SDK's history transaction contract (agents-core
 * dist/memory/session.d.ts, SessionHistoryTransactionAwareSession), clause by clause, with
 * lost replies, a writer that dies mid-commit and two workers on one session.
 */

const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content });
const said = (text: string): AgentInputItem => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});
const call = (callId: string): AgentInputItem => ({
  type: 'function_call',
  callId,
  name: 'weather',
  arguments: '{"city":"Paris"}',
  status: 'completed',
});
const result = (callId: string, text: string): AgentInputItem => ({
  type: 'function_call_result',
  callId,
  name: 'weather',
  status: 'completed',
  output: { type: 'text', text },
});

let n = 0;
const fresh = () => `sess-${Date.now().toString(36)}-${n++}`;

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`HefestoSession on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory);
    });
    afterAll(() => world.close());

    it('keeps the history on the server: a second session object continues it', async () => {
      const id = fresh();
      const first = world.session(id);
      await first.addItems([user('hi'), said('hello')]);
      await first.addItems([]);

      const second = world.session(id);

      expect(await second.getSessionId()).toBe(id);
      expect(await second.getItems()).toEqual([user('hi'), said('hello')]);
      expect(await second.getItems(1)).toEqual([said('hello')]);
      expect(await second.getItems(0)).toEqual([]);
    });

    it('pops the last item once, as a change in the ledger, and nothing from an empty history', async () => {
      const id = fresh();
      const s = world.session(id);
      await s.addItems([user('a'), said('b')]);

      expect(await s.popItem()).toEqual(said('b'));
      expect(await s.popItem()).toEqual(user('a'));
      expect(await s.popItem()).toBeUndefined();
      const { events } = await world.client().readEvents(id);
      expect(events.map((e) => e.type)).toEqual([
        'hefesto.delta',
        'hefesto.delta',
        'hefesto.delta',
      ]);
    });

    it('clearSession starts a new life: no items, operation ids forgotten, the clearing recorded', async () => {
      const id = fresh();
      const s = world.session(id);
      await s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [user('a')] },
      });

      await s.clearSession();
      await s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [user('b')] },
      });

      expect(await s.getItems()).toEqual([user('b')]);
      // The chain is cut at the clear (seq 2): served from there on, the clear in the head.
      const { events } = await world.client().readEvents(id);
      expect(events.map((e) => e.seq)).toEqual([3]);
      expect(await world.ledger.appender.readHead('default', id)).toMatchObject({
        prunedSeq: 2,
        clearedSeq: 2,
      });
    });

    it('replaceHistoryWithCompaction replaces the history and keeps the session', async () => {
      const id = fresh();
      const s = world.session(id);
      await s.addItems([user('a'), said('b'), user('c')]);
      const compacted: AgentInputItem[] = [
        { type: 'compaction', encrypted_content: 'x' } as AgentInputItem,
        user('c'),
      ];

      await s.replaceHistoryWithCompaction(compacted);

      expect(await s.getItems()).toEqual(compacted);
    });

    describe('applyHistoryTransaction', () => {
      it('persists the change and its operation id: repeated with the same transaction it succeeds without applying again', async () => {
        const s = world.session(fresh());
        await s.addItems([user('a'), call('c1')]);
        const tx = {
          operationId: 'turn-1',
          transaction: {
            type: 'replace_suffix' as const,
            expectedSuffix: [call('c1')],
            replacement: [call('c1'), result('c1', 'sunny')],
          },
        };

        await s.applyHistoryTransaction(tx);
        await s.applyHistoryTransaction(structuredClone(tx)); // its suffix no longer matches

        expect(await s.getItems()).toEqual([user('a'), call('c1'), result('c1', 'sunny')]);
      });

      it('reused with a different transaction fails without changing history', async () => {
        const s = world.session(fresh());
        await s.applyHistoryTransaction({
          operationId: 'turn-1',
          transaction: { type: 'append_items', items: [user('a')] },
        });

        const reused = s.applyHistoryTransaction({
          operationId: 'turn-1',
          transaction: { type: 'append_items', items: [user('b')] },
        });

        await expect(reused).rejects.toThrow(UserError);
        await expect(reused).rejects.toThrow('already applied with a different transaction');
        expect(await s.getItems()).toEqual([user('a')]);
      });

      it('fails without changing history, or recording the id, when the suffix does not match', async () => {
        const s = world.session(fresh());
        await s.addItems([user('a'), said('b')]);
        const tx = (suffix: AgentInputItem[]) => ({
          operationId: 'turn-1',
          transaction: { type: 'replace_suffix' as const, expectedSuffix: suffix, replacement: [] },
        });

        await expect(s.applyHistoryTransaction(tx([said('x')]))).rejects.toThrow(
          'suffix no longer matches',
        );
        await expect(
          s.applyHistoryTransaction(tx([user('z'), user('a'), said('b')])),
        ).rejects.toThrow(UserError);
        expect(await s.getItems()).toEqual([user('a'), said('b')]);
        await s.applyHistoryTransaction(tx([said('b')]));
        expect(await s.getItems()).toEqual([user('a')]);
      });

      it('refuses what cannot be compared deterministically before changing anything or recording the id', async () => {
        const id = fresh();
        const s = world.session(id);
        const cyclic: Record<string, unknown> = { type: 'message', role: 'user', content: 'c' };
        cyclic.self = cyclic;
        const bad: unknown[] = [
          { type: 'message', role: 'user', content: 'd', providerData: { at: new Date(0) } },
          {
            type: 'message',
            role: 'user',
            content: 'u',
            providerData: { bytes: new Uint8Array([1]) },
          },
          { type: 'message', role: 'user', content: 'n', providerData: { n: Number.NaN } },
          { type: 'message', role: 'user', content: 'f', providerData: { f: () => 1 } },
          cyclic,
          { type: 'not-an-item' },
        ];
        for (const item of bad) {
          const tx = {
            operationId: 'turn-1',
            transaction: { type: 'append_items' as const, items: [item as AgentInputItem] },
          };
          await expect(s.applyHistoryTransaction(tx)).rejects.toThrow(UserError);
        }
        await expect(
          s.applyHistoryTransaction({
            operationId: ' ',
            transaction: { type: 'append_items', items: [] },
          }),
        ).rejects.toThrow('operationId must be a non-empty string');
        await expect(
          s.applyHistoryTransaction({
            operationId: 'turn-1',
            transaction: { type: 'append_items', items: [], extra: 1 } as never,
          }),
        ).rejects.toThrow('fields are invalid');

        await expect(world.client().getStream(id)).rejects.toMatchObject({
          code: 'ErrStreamNotFound',
        });
        await s.applyHistoryTransaction({
          operationId: 'turn-1',
          transaction: { type: 'append_items', items: [user('ok')] },
        });
        expect(await s.getItems()).toEqual([user('ok')]);
      });

      it('retried by its caller after the reply was lost succeeds, applied once', async () => {
        const id = fresh();
        const lose = { n: 1 };
        const s = world.session(id, { retry: { maxAttempts: 1 }, lose });
        await s.addItems([user('a'), call('c1')]).catch(() => {});
        lose.n = 1;
        const tx = {
          operationId: 'turn-1',
          transaction: {
            type: 'replace_suffix' as const,
            expectedSuffix: [call('c1')],
            replacement: [call('c1'), result('c1', 'sunny')],
          },
        };

        // the process "crashes" here: the change was committed, its caller never heard
        await expect(s.applyHistoryTransaction(tx)).rejects.toMatchObject({
          code: 'ErrUnavailable',
        });
        const resumed = world.session(id);
        await resumed.applyHistoryTransaction(structuredClone(tx));

        expect(await resumed.getItems()).toEqual([user('a'), call('c1'), result('c1', 'sunny')]);
      });

      it('retried after its writer died between the segment and the commit is applied once', async () => {
        const id = fresh();
        const s = world.session(id, { retry: { maxAttempts: 1 } });
        await s.addItems([user('a')]);
        const tx = {
          operationId: 'turn-1',
          transaction: { type: 'append_items' as const, items: [call('c1')] },
        };

        world.crashAfter('segment-written');
        await expect(s.applyHistoryTransaction(tx)).rejects.toMatchObject({ status: 500 });
        world.advance(3_000); // past the in-flight grace of its orphan segment
        await world.session(id).applyHistoryTransaction(structuredClone(tx));

        expect(await s.getItems()).toEqual([user('a'), call('c1')]);
      });

      it('two workers on one suffix: the stale writer fails, the changes never interleave', async () => {
        const id = fresh();
        await world.session(id).addItems([user('a'), call('c1')]);
        const a = world.session(id);
        const b = world.session(id);
        const tx = (who: string) => ({
          operationId: `worker-${who}`,
          transaction: {
            type: 'replace_suffix' as const,
            expectedSuffix: [call('c1')],
            replacement: [call('c1'), result('c1', who)],
          },
        });

        const settled = await Promise.allSettled([
          a.applyHistoryTransaction(tx('a')),
          b.applyHistoryTransaction(tx('b')),
        ]);

        expect(settled.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
        const rejected = settled.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        expect(rejected.reason).toBeInstanceOf(UserError);
        const winner = settled[0]?.status === 'fulfilled' ? 'a' : 'b';
        expect(await a.getItems()).toEqual([user('a'), call('c1'), result('c1', winner)]);
      });
    });

    it('two workers appending at once: both appends land, whole and in some order', async () => {
      const id = fresh();
      const workers = [world.session(id), world.session(id), world.session(id)];

      await Promise.all(workers.map((w, i) => w.addItems([user(`q${i}`), said(`a${i}`)])));

      const history = await world.session(id).getItems();
      expect(history).toHaveLength(6);
      for (let at = 0; at < 6; at += 2) {
        const q = history[at] as { content: string };
        expect(history[at + 1]).toEqual(said(`a${q.content.slice(1)}`));
      }
    });

    it('addItems and popItem survive a lost reply (the client retries them under one operation id)', async () => {
      const id = fresh();
      const lose = { n: 1 };
      const s = world.session(id, { lose });

      await s.addItems([user('a'), said('b')]);
      lose.n = 1;
      const popped = await s.popItem();

      expect(popped).toEqual(said('b'));
      expect(await s.getItems()).toEqual([user('a')]);
    });

    it('sends one request per session call (none for getItems(0) and addItems([]))', async () => {
      const sent: string[] = [];
      const s = world.session(fresh(), { sent });
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['addItems', () => s.addItems([user('a'), said('b'), user('c')])],
        ['getItems()', () => s.getItems()],
        ['getItems(2)', () => s.getItems(2)],
        ['popItem', () => s.popItem()],
        [
          'applyHistoryTransaction',
          () =>
            s.applyHistoryTransaction({
              operationId: 'op-1',
              transaction: { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [] },
            }),
        ],
        ['replaceHistoryWithCompaction', () => s.replaceHistoryWithCompaction([user('z')])],
        ['clearSession', () => s.clearSession()],
        ['getItems(0)', () => s.getItems(0)],
        ['addItems([])', () => s.addItems([])],
        ['getSessionId', () => s.getSessionId()],
      ];
      const counts: Record<string, number> = {};
      for (const [name, call] of calls) {
        const before = sent.length;
        await call();
        counts[name] = sent.length - before;
      }

      expect(counts).toEqual({
        addItems: 1,
        'getItems()': 1,
        'getItems(2)': 1,
        popItem: 1,
        applyHistoryTransaction: 1,
        replaceHistoryWithCompaction: 1,
        clearSession: 1,
        'getItems(0)': 0,
        'addItems([])': 0,
        getSessionId: 0,
      });
      expect(
        new Set(sent.map((r) => r.replace(/\/v1\/streams\/[^/]+/, '/v1/streams/{id}'))),
      ).toEqual(new Set(['POST /v1/streams/{id}/history', 'GET /v1/streams/{id}/history']));
    });

    it('refuses a session id that cannot name a stream', () => {
      expect(() => world.session('has spaces')).toThrow(UserError);
      expect(() => new HefestoSession({ baseUrl: 'http://x', apiKey: undefined })).toThrow();
    });
  });
}
