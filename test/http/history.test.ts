import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { historyOperationKey, idempotencyRecordKey } from '../../shared/chain/storage-keys.js';
import { operationIdHash } from '../../shared/history/history-model.js';
import {
  createHarness,
  type Harness,
  type HarnessOptions,
  readJson,
  STORE_FACTORIES,
} from './harness.js';

/**
 * The session history routes (shared/history/): the OpenAI Agents SDK's history transaction
 * contract clause by clause, evaluated by the server, on memory and local stores.
 */

const user = (text: string) => ({ type: 'message', role: 'user', content: text });
const said = (text: string) => ({
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text }],
});

interface Outcome {
  seq: number;
  applied: boolean;
  popped?: unknown;
  incarnation?: string;
}

for (const factory of STORE_FACTORIES) {
  describe(`session history on ${factory.name}`, () => {
    let h: Harness;
    let key: string;

    const start = async (options: HarnessOptions = {}) => {
      h?.close();
      h = createHarness(factory, options);
      key = await h.newKey('acme');
    };
    beforeEach(() => start());
    afterEach(() => h.close());

    const change = (body: unknown, stream = 'sess-1', k = key) =>
      h.request(`/v1/streams/${stream}/history`, { key: k, body });
    const apply = async (body: unknown, stream = 'sess-1'): Promise<Outcome> => {
      const res = await change(body, stream);
      if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
      return readJson<Outcome>(res);
    };
    const items = async (limit?: number, stream = 'sess-1', k = key): Promise<unknown[]> => {
      const q = limit === undefined ? '' : `?limit=${limit}`;
      const res = await h.request(`/v1/streams/${stream}/history${q}`, { key: k });
      expect(res.status).toBe(200);
      return (await readJson<{ items: unknown[] }>(res)).items;
    };
    const append = (list: unknown[], operationId?: string) =>
      apply({
        ...(operationId ? { operationId } : {}),
        change: { type: 'append_items', items: list },
      });

    it('answers a session never written with no items', async () => {
      expect(await items()).toEqual([]);
      expect(await items(3)).toEqual([]);
    });

    it('appends and answers the last `limit` items in order, one delta per change', async () => {
      await append([user('a'), said('b')]);
      await append([user('c')]);

      expect(await items()).toEqual([user('a'), said('b'), user('c')]);
      expect(await items(2)).toEqual([said('b'), user('c')]);
      expect(await items(0)).toEqual([]);
      expect(await items(10)).toHaveLength(3);
      expect(await h.headSeq(key, 'sess-1')).toBe(2);
    });

    it('pops the last item, recorded in the ledger, and pops nothing from an empty history', async () => {
      await append([user('a'), said('b')]);

      const popped = await apply({ change: { type: 'pop' } });
      const again = await apply({ change: { type: 'pop' } });
      const none = await apply({ change: { type: 'pop' } });

      expect(popped).toMatchObject({ applied: true, popped: said('b') });
      expect(again).toMatchObject({ applied: true, popped: user('a') });
      expect(none).toEqual({ seq: 3, applied: false });
      const res = await h.request('/v1/streams/sess-1/events', { key });
      const { events } = await readJson<{ events: Array<{ type: string }> }>(res);
      expect(events.map((e) => e.type)).toEqual([
        'hefesto.delta',
        'hefesto.delta',
        'hefesto.delta',
      ]);
    });

    describe('a replace_suffix transaction', () => {
      it('replaces the suffix when it matches (compared as canonical JSON)', async () => {
        await append([user('a'), said('b')]);
        // the same item with its keys in another order is the same suffix
        const reordered = {
          content: [{ text: 'b', type: 'output_text' }],
          status: 'completed',
          role: 'assistant',
          type: 'message',
        };

        const out = await apply({
          operationId: 'op-1',
          change: {
            type: 'replace_suffix',
            expectedSuffix: [reordered],
            replacement: [said('B'), user('c')],
          },
        });

        expect(out.applied).toBe(true);
        expect(await items()).toEqual([user('a'), said('B'), user('c')]);
      });

      it('fails without changing history when the suffix does not match', async () => {
        await append([user('a'), said('b')]);
        const seq = await h.headSeq(key, 'sess-1');

        const wrong = await change({
          operationId: 'op-1',
          change: { type: 'replace_suffix', expectedSuffix: [said('x')], replacement: [] },
        });
        const tooLong = await change({
          operationId: 'op-2',
          change: {
            type: 'replace_suffix',
            expectedSuffix: [user('z'), user('a'), said('b')],
            replacement: [],
          },
        });

        expect(wrong.status).toBe(409);
        expect(await wrong.json()).toMatchObject({ code: 'ErrDivergenceDetected' });
        expect(tooLong.status).toBe(409);
        expect(await items()).toEqual([user('a'), said('b')]);
        expect(await h.headSeq(key, 'sess-1')).toBe(seq);
        // nothing recorded the operation id: it applies later
        const later = await apply({
          operationId: 'op-1',
          change: { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [] },
        });
        expect(later.applied).toBe(true);
      });
    });

    describe('an operation id', () => {
      const tx = { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [said('B')] };

      it('repeated with the same transaction succeeds without applying it again', async () => {
        await append([user('a'), said('b')]);
        const first = await apply({ operationId: 'op-1', change: tx });
        const seq = await h.headSeq(key, 'sess-1');

        // its suffix no longer matches: the retry is still a success, and writes nothing
        const retry = await apply({ operationId: 'op-1', change: tx });

        expect(first.applied).toBe(true);
        expect(retry).toMatchObject({ seq: first.seq, applied: false });
        expect(retry.incarnation).toBe(first.incarnation);
        expect(await h.headSeq(key, 'sess-1')).toBe(seq);
        expect(await items()).toEqual([user('a'), said('B')]);
      });

      it('reused with a different transaction fails without changing history', async () => {
        await append([user('a')], 'op-1');
        const seq = await h.headSeq(key, 'sess-1');

        const other = await change({
          operationId: 'op-1',
          change: { type: 'append_items', items: [user('b')] },
        });

        expect(other.status).toBe(422);
        expect(await other.json()).toMatchObject({ code: 'ErrIdempotencyKeyReused' });
        expect(await items()).toEqual([user('a')]);
        expect(await h.headSeq(key, 'sess-1')).toBe(seq);
      });

      it('is recorded even by a transaction that changes nothing', async () => {
        await append([], 'op-empty');

        const other = await change({
          operationId: 'op-empty',
          change: { type: 'append_items', items: [user('b')] },
        });

        expect(other.status).toBe(422);
        expect(await items()).toEqual([]);
      });

      it('is recognized by the transaction, not the request: same items, keys reordered', async () => {
        await append([user('a')], 'op-1');

        const retry = await apply({
          change: {
            items: [{ content: 'a', role: 'user', type: 'message' }],
            type: 'append_items',
          },
          operationId: 'op-1',
        });

        expect(retry.applied).toBe(false);
        expect(await items()).toEqual([user('a')]);
      });

      it('is kept as long as the stream lives (past the 24 h of request keys)', async () => {
        await append([user('a')], 'op-1');
        h.advance(30 * 86_400_000);

        const retry = await apply({
          operationId: 'op-1',
          change: { type: 'append_items', items: [user('a')] },
        });

        expect(retry.applied).toBe(false);
        expect(await items()).toEqual([user('a')]);
        const record = await h.records.get(
          idempotencyRecordKey(
            'acme',
            'sess-1',
            '',
            historyOperationKey(0, operationIdHash('op-1')),
          ),
        );
        expect(record).toBeDefined();
        expect(record?.ttl).toBeUndefined();
      });

      it('belongs to its stream and tenant', async () => {
        const other = await h.newKey('globex');
        await append([user('a')], 'op-1');

        const res = await change(
          { operationId: 'op-1', change: { type: 'append_items', items: [user('z')] } },
          'sess-1',
          other,
        );
        await apply(
          { operationId: 'op-1', change: { type: 'append_items', items: [user('y')] } },
          'sess-2',
        );

        expect(res.status).toBe(200);
        expect(await items(undefined, 'sess-1', other)).toEqual([user('z')]);
        expect(await items(undefined, 'sess-2')).toEqual([user('y')]);
        expect(await items()).toEqual([user('a')]);
      });

      it('is forgotten by a clear, which a retry of the clear does not repeat', async () => {
        await append([user('a')], 'op-1');
        await apply({ operationId: 'clear-1', change: { type: 'clear' } });
        await append([user('b')], 'op-1'); // a new life: op-1 is new in it

        const retried = await apply({ operationId: 'clear-1', change: { type: 'clear' } });

        expect(retried.applied).toBe(false);
        expect(await items()).toEqual([user('b')]);
      });
    });

    describe('its record tampered with (docs/ledger-format.md, idempotency-service)', () => {
      const recordKey = (op: string) =>
        idempotencyRecordKey('acme', 'sess-1', '', historyOperationKey(0, operationIdHash(op)));

      it('its digest edited: the retry is refused, nothing written', async () => {
        await append([user('a')], 'op-1');
        const stored = await h.records.get(recordKey('op-1'));
        await h.records.put({ ...(stored ?? recordKey('op-1')), digest: '0'.repeat(64) });

        const retry = await change({
          operationId: 'op-1',
          change: { type: 'append_items', items: [user('a')] },
        });

        expect(retry.status).toBe(422);
        expect(await items()).toEqual([user('a')]);
      });

      it('deleted: a replace_suffix retry fails on its own suffix (an append would apply twice)', async () => {
        await append([user('a'), said('b')]);
        const tx = {
          operationId: 'op-1',
          change: { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [said('B')] },
        };
        await apply(tx);
        await h.records.delete(recordKey('op-1'));

        const retry = await change(tx);

        expect(retry.status).toBe(409);
        expect(await items()).toEqual([user('a'), said('B')]);
      });
    });

    it('a clear under an id its life used for another change, forgotten by a clear since, applies', async () => {
      await append([user('a')], 'op-x');
      await apply({ operationId: 'clear-1', change: { type: 'clear' } });
      await append([user('b')]);

      const cleared = await apply({ operationId: 'op-x', change: { type: 'clear' } });

      expect(cleared.applied).toBe(true);
      expect(await items()).toEqual([]);
    });

    it('a pop retried answers the item it popped, and pops once', async () => {
      await append([user('a'), said('b')]);

      const first = await apply({ operationId: 'pop-1', change: { type: 'pop' } });
      const retry = await apply({ operationId: 'pop-1', change: { type: 'pop' } });

      expect(first).toMatchObject({ applied: true, popped: said('b') });
      expect(retry).toMatchObject({ seq: first.seq, applied: false, popped: said('b') });
      expect(await items()).toEqual([user('a')]);
    });

    it('replace_history sets the whole history and keeps its operation ids', async () => {
      await append([user('a'), said('b')], 'op-1');

      await apply({
        change: { type: 'replace_history', items: [{ type: 'compaction', summary: 's' }] },
      });

      expect(await items()).toEqual([{ type: 'compaction', summary: 's' }]);
      const reused = await change({
        operationId: 'op-1',
        change: { type: 'append_items', items: [] },
      });
      expect(reused.status).toBe(422);
    });

    it('a transaction retried after its writer died mid-commit is applied once', async () => {
      let crashes = 0;
      await start({
        ledger: {
          crash: (step) => {
            if (step === 'segment-written' && crashes-- > 0) throw new Error('process died');
          },
        },
      });
      await append([user('a'), said('b')]);
      crashes = 1;
      const tx = {
        operationId: 'op-1',
        change: { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [said('B')] },
      };

      const died = await change(tx);
      h.advance(2_500); // past the grace in which its segment may still be committing
      const retry = await apply(tx);

      expect(died.status).toBe(500);
      expect(retry.applied).toBe(false);
      expect(await items()).toEqual([user('a'), said('B')]);
      expect(await h.headSeq(key, 'sess-1')).toBe(2);
    });

    it('two writers on one suffix: one applies, the stale one fails, never interleaved', async () => {
      await append([user('a'), said('b')]);
      const tx = (text: string, id: string) => ({
        operationId: id,
        change: { type: 'replace_suffix', expectedSuffix: [said('b')], replacement: [said(text)] },
      });

      const answers = await Promise.all([change(tx('one', 'w1')), change(tx('two', 'w2'))]);

      const statuses = answers.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409]);
      const history = await items();
      expect(history).toHaveLength(2);
      expect([
        [user('a'), said('one')],
        [user('a'), said('two')],
      ]).toContainEqual(history);
    });

    it('refuses bad input before writing anything', async () => {
      const bad = [
        { change: { type: 'append_items' } },
        { change: { type: 'drop_table' } },
        { operationId: '', change: { type: 'pop' } },
        { change: { type: 'pop', extra: 1 } },
      ];
      for (const body of bad) expect((await change(body)).status).toBe(400);
      expect(await h.headSeq(key, 'sess-1')).toBeUndefined();
    });
  });
}
