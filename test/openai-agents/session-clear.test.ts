import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoApiError } from '../../packages/client/src/index.js';
import { toHead } from '../../shared/chain/layout.js';
import { headKey, streamObjectPrefix, streamPk } from '../../shared/chain/storage-keys.js';
import { auditStream } from '../../shared/client/audit.js';
import { MemoryTrustStore } from '../../shared/client/trust-store.js';
import { ChunkCollector } from '../../shared/compaction/chunk-gc.js';
import { acquireLease, releaseLease } from '../../shared/compaction/compact-lease.js';
import { mergeStream } from '../../shared/compaction/compact-merge.js';
import { emptyStats } from '../../shared/compaction/compact-types.js';
import { ConflictError } from '../../shared/domain/errors.js';
import { cutAtClear } from '../../shared/state/clear-cut.js';
import type { StorePair } from '../support/stores.js';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * clearSession cuts the session's chain at the clear (docs/openai-agents.md, "Clearing"): what
 * came before is served by no route from the moment the clear answers, the compactor removes
 * its bytes from both stores, and only the clear itself stays in the verifiable chain.
 */

const TENANT = 'default';
const user = (content: string): AgentInputItem => ({ type: 'message', role: 'user', content });
/** An item over `largeItemBytes` (sent by reference): a large tool output. */
const big = (seed: string): AgentInputItem => ({
  type: 'function_call_result',
  callId: 'c1',
  name: 'fetch_page',
  status: 'completed',
  output: { type: 'text', text: `${seed}:${'x'.repeat(600 * 1024)}` },
});
/** Past the upload references' time to live (a day), so only the streams' references hold. */
const PAST_UPLOADS = 2 * 86_400_000;

let n = 0;
const fresh = () => `clear-${Date.now().toString(36)}-${n++}`;

/** Two visits of the chunk GC alone (condemn, then sweep past the grace), past upload TTLs. */
const collectChunks = async (world: SessionWorld) => {
  let now = Date.now() + 10 * 86_400_000;
  const gc = new ChunkCollector({
    chunks: world.ledger.states.chunks,
    objects: world.stores.objects,
    records: world.stores.records,
    clock: { now: () => now },
    graceMs: 1000,
    leaseMs: 1000,
  });
  expect((await gc.run(TENANT)).phase).toBe('condemned');
  now += 2000;
  expect((await gc.run(TENANT)).phase).toBe('swept');
};

/** Where in the stores `needle` is held: object keys and record keys (raw bytes and JSON). */
const holding = async (stores: StorePair, stream: string, needle: string) => {
  const found: string[] = [];
  const bytes = new TextEncoder().encode(needle);
  const contains = (body: Uint8Array) => Buffer.from(body).includes(Buffer.from(bytes));
  let after: string | undefined;
  do {
    const page = await stores.objects.list(`t/${TENANT}/`, { after });
    for (const { key } of page.items) {
      const stored = await stores.objects.get(key);
      if (stored && contains(stored.body)) found.push(key);
    }
    after = page.next;
  } while (after !== undefined);
  for (const pk of [streamPk(TENANT, stream), `t#${TENANT}#chunkrefs`]) {
    let next: string | undefined;
    do {
      const page = await stores.records.query(pk, { after: next });
      for (const item of page.items) if (JSON.stringify(item).includes(needle)) found.push(item.sk);
      next = page.next;
    } while (next !== undefined);
  }
  return found;
};

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HefestoApiError);
  return (err as HefestoApiError).code;
};

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`clearSession on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory);
    });
    afterAll(() => world.close());

    /** A session with a history holding `secret`, cleared, then one item of its new life. */
    const clearedSession = async (secret: string) => {
      const id = fresh();
      const s = world.session(id);
      await s.addItems([user(`${secret} one`), user(`${secret} two`)]);
      await s.popItem();
      await s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [user(`${secret} three`)] },
      });
      const client = world.client();
      const before = (await client.getState(id)).seq;
      await s.clearSession();
      await s.addItems([user('after the clear')]);
      return { id, s, client, before };
    };

    it('serves nothing from before the clear: state at an old seq, events, history, fork', async () => {
      const secret = `old-${fresh()}`;
      const { id, s, client, before } = await clearedSession(secret);
      const cleared = before + 1;

      expect(await s.getItems()).toEqual([user('after the clear')]);
      for (let at = 1; at < cleared; at++) {
        expect(await refusal(client.getState(id, { at }))).toBe('ErrPruned');
        expect(await refusal(client.fork(id, { newStreamId: `${id}-f${at}`, at }))).toBe(
          'ErrPruned',
        );
      }
      expect(await refusal(client.readEvents(id, { from: 1 }))).toBe('ErrPruned');
      const { events } = await client.readEvents(id);
      expect(events.map((e) => e.seq)).toEqual([cleared + 1]);
      expect(JSON.stringify(events)).not.toContain(secret);
      // The state at the clear is its new life, empty; a fork there starts from it.
      expect((await client.getState(id, { at: cleared })).state).toEqual({ items: [], life: 1 });
      await client.fork(id, { newStreamId: `${id}-at-clear`, at: cleared });
      expect((await client.getState(`${id}-at-clear`)).state).toEqual({ items: [], life: 1 });
    });

    it('the compactor removes the cleared bytes from both stores', async () => {
      const secret = `gone-${fresh()}`;
      const { id } = await clearedSession(secret);
      // Held before compaction (the check can see them): segments, bases, chunks.
      expect(await holding(world.stores, id, secret)).not.toEqual([]);

      await world.compact();

      expect(await holding(world.stores, id, secret)).toEqual([]);
      const session = world.session(id);
      expect(await session.getItems()).toEqual([user('after the clear')]);
      await session.addItems([user('later')]);
      expect(await session.getItems()).toEqual([user('after the clear'), user('later')]);
      // What is left of the stream verifies, from the clear on.
      expect((await world.client().verify(id)).ok).toBe(true);
      const objects = await world.stores.objects.list(streamObjectPrefix(TENANT, id));
      expect(objects.items.length).toBeGreaterThan(0);
    });

    it('releases the chunks of the cleared items sent by reference: the compactor removes their bytes', async () => {
      const secret = `large-gone-${fresh()}`;
      const id = fresh();
      const s = world.session(id);
      await s.addItems([big(secret), user('small')]);
      await s.clearSession();
      await s.addItems([user('after the clear')]);
      // Held before compaction: the item's chunks.
      expect(await holding(world.stores, id, secret)).not.toEqual([]);

      world.advance(PAST_UPLOADS);
      await world.compact();

      expect(await holding(world.stores, id, secret)).toEqual([]);
      expect(await world.session(id).getItems()).toEqual([user('after the clear')]);
      expect((await world.client().verify(id)).ok).toBe(true);
    });

    it('a large item added again before the clear releases its reference keeps its chunks', async () => {
      const gone = `large-old-${fresh()}`;
      const kept = `large-again-${fresh()}`;
      const id = fresh();
      const s = world.session(id, { retry: { maxAttempts: 1, baseDelayMs: 1 } });
      await s.addItems([big(gone), big(kept)]);
      // The clear commits, its cut (and release) not done yet: the same content is added
      // again meanwhile, its reference already held by the cleared history.
      world.crashAfter('committed');
      await expect(s.clearSession()).rejects.toThrow();
      await world.session(id).addItems([big(kept)]);

      // The clear's cut and release (as its request makes them), then the chunk GC alone: no
      // base written since holds the new item's chunks, only its stream's value reference.
      expect(
        await cutAtClear(
          { records: world.stores.records, states: world.ledger.states },
          { tenant: TENANT, stream: id },
        ),
      ).toBe(true);
      await collectChunks(world);
      world.restart(); // nothing warm: the item is read from its chunks

      expect(await holding(world.stores, id, gone)).toEqual([]);
      expect(await world.session(id).getItems()).toEqual([big(kept)]);
      await world.session(id).addItems([user('later')]);
      expect(await world.session(id).getItems()).toEqual([big(kept), user('later')]);
    });

    it('a clear racing an add of the same large content: what is added stays readable after compaction', async () => {
      for (let round = 0; round < 4; round++) {
        const secret = `large-race-${fresh()}`;
        const id = fresh();
        const a = world.session(id);
        const b = world.session(id);
        await a.addItems([big(secret)]);

        await Promise.all([a.clearSession(), b.addItems([big(secret)])]);
        const items = await world.session(id).getItems();
        world.advance(PAST_UPLOADS);
        await world.compact();
        world.restart();

        expect(await world.session(id).getItems()).toEqual(items);
        if (items.length === 0) expect(await holding(world.stores, id, secret)).toEqual([]);
        else expect(items).toEqual([big(secret)]);
      }
    });

    it('keeps the clearing auditable: /verify and an audit start at the clear, a verifying client goes on across it', async () => {
      const id = fresh();
      const trustStore = new MemoryTrustStore();
      const s = world.session(id, { client: { verify: true, trustStore } });
      await s.addItems([user('a'), user('b')]);
      await s.clearSession();
      const key = { baseUrl: 'http://hefesto.test', tenant: TENANT, stream: id };
      expect(await trustStore.get(key)).toMatchObject({ treeSize: 2 });
      const auditFrom = (trusted: MemoryTrustStore) =>
        auditStream({
          baseUrl: key.baseUrl,
          tenant: TENANT,
          streamId: id,
          get: world.get,
          trustStore: trusted,
        });

      await world.compact();
      await s.addItems([user('c')]);

      // The client's trusted head from before the clear is consistent with the head after it.
      expect(await trustStore.get(key)).toMatchObject({ treeSize: 3 });
      expect(await world.client().verify(id)).toMatchObject({ ok: true, seq: 3 });
      expect(await world.ledger.appender.readHead(TENANT, id)).toMatchObject({
        prunedSeq: 2,
        clearedSeq: 2,
      });
      const audit = await auditFrom(trustStore);
      expect(audit).toMatchObject({ fromGenesis: false, events: 1, trustedBefore: 3 });
      expect(audit.head.treeSize).toBe(3);
      // The clear's own event is kept (it binds the base at the clear) and says what it was.
      const [clear] = await world.ledger.reader.readSpan(TENANT, id, 2, 2);
      expect(clear?.payload).toMatchObject({
        clear: true,
        ops: [
          { op: 'set', path: '/items', value: [] },
          { op: 'set', path: '/life', value: 1 },
        ],
      });
    });

    it('operation ids of the cleared life do not collide with the new one', async () => {
      const { id, s } = await clearedSession(`ids-${fresh()}`);

      // op-1 was an append of the cleared life: in the new one it is a new operation.
      await s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [user('new op-1')] },
      });
      await s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [user('new op-1')] },
      });

      expect(await world.session(id).getItems()).toEqual([
        user('after the clear'),
        user('new op-1'),
      ]);
    });

    it('a clear whose request dies after its commit is cut by its retry, or else by the compactor', async () => {
      const secret = `crash-${fresh()}`;
      for (const finish of ['retry', 'compactor'] as const) {
        const id = fresh();
        const s = world.session(id, { retry: { maxAttempts: 1, baseDelayMs: 1 } });
        await s.addItems([user(`${secret} a`)]);
        const client = world.client();
        world.crashAfter('committed');
        await expect(s.clearSession()).rejects.toThrow();
        // Committed, not cut yet: the clear is in the chain, the old state still below it.
        expect(await s.getItems()).toEqual([]);

        if (finish === 'retry') {
          await world.client().changeHistory(id, { type: 'clear' }, { operationId: 'x' });
        } else {
          await world.compact();
        }

        expect(await refusal(client.getState(id, { at: 1 }))).toBe('ErrPruned');
        expect((await client.verify(id)).ok).toBe(true);
      }
    });

    it('a clear whose cut cannot be made answers 503, and its retry cuts once it can', async () => {
      const id = fresh();
      const s = world.session(id, { retry: { maxAttempts: 1, baseDelayMs: 1 } });
      await s.addItems([user('before the clear')]);
      world.crashAfter('committed');
      await expect(s.clearSession()).rejects.toThrow();
      const { records } = world.stores;
      const headNow = async () => toHead((await records.get(headKey(TENANT, id))) as never);
      const at = (await headNow()).clearedSeq as number;
      expect(at).toBeGreaterThan(0);
      // The cut's transaction is cancelled (as DynamoDB cancels one racing another write to the
      // head): the clear must not answer as done while the old state is still served.
      const transact = records.transact;
      let cancelled = 0;
      records.transact = async (ops) => {
        const cut = ops.some((op) => op.kind === 'update' && 'prunedSeq' in (op.update.set ?? {}));
        if (cut) {
          cancelled++;
          throw new ConflictError('transaction cancelled: TransactionConflict');
        }
        return transact.call(records, ops);
      };
      const client = world.client({ retry: { maxAttempts: 1, baseDelayMs: 1 } });
      try {
        const err = await client.changeHistory(id, { type: 'clear' }, { operationId: 'x' }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(HefestoApiError);
        expect(err).toMatchObject({ status: 503, code: 'ErrUnavailable' });
      } finally {
        records.transact = transact;
      }
      expect(cancelled).toBeGreaterThan(0);
      // The retry is a clear of its own (another operation id), committed at its own seq.
      const cleared = (await headNow()).clearedSeq as number;
      expect(cleared).toBeGreaterThanOrEqual(at);
      expect((await headNow()).prunedSeq ?? 0).toBeLessThan(cleared);
      // The same retry, once the cut can be made, answers 200 and cuts.
      await client.changeHistory(id, { type: 'clear' }, { operationId: 'x' });
      expect((await headNow()).prunedSeq).toBe(cleared);
      expect(await refusal(client.getState(id, { at: 1 }))).toBe('ErrPruned');
      expect((await client.verify(id)).ok).toBe(true);
    });

    it('a merge visit that read the head before a clear never merges across it: the clear is cut', async () => {
      const secret = `merge-${fresh()}`;
      const id = fresh();
      const s = world.session(id, { retry: { maxAttempts: 1, baseDelayMs: 1 } });
      await s.addItems([user(`${secret} a`)]);
      await s.addItems([user(`${secret} b`)]);
      const { records, objects } = world.stores;
      const clock = { now: () => Date.now() };
      // The visit starts: lease taken, head read (no clear yet).
      const lease = await acquireLease(records, clock, {
        tenant: TENANT,
        stream: id,
        owner: 'merge-visit',
        leaseMs: 60_000,
      });
      const item = await records.get(headKey(TENANT, id));
      if (!lease || !item) throw new Error('no lease or head');
      const visit = {
        tenant: TENANT,
        stream: id,
        head: toHead(item),
        fence: lease.fence,
        deadline: Number.POSITIVE_INFINITY,
        renew: async () => true,
        gcDueAt: clock.now(),
        stats: emptyStats(),
      };
      // The clear commits at C (its request dies before its cut), the session appends C+1.
      world.crashAfter('committed');
      await expect(s.clearSession()).rejects.toThrow();
      await s.addItems([user('after the clear')]);
      // The visit merges what it planned from the index as it is now.
      const deps = { objects, records, clock, states: world.ledger.states };
      const limits = { targetBytes: 1 << 20, graceMs: 1000, leaseMs: 60_000, maxInputs: 8 };
      await mergeStream(deps, limits, visit);
      await releaseLease(records, { tenant: TENANT, stream: id, owner: 'merge-visit' });
      // The compactor's visit the clear's commit scheduled cuts: nothing before it is served.
      await world.compact();
      const client = world.client();
      expect(await refusal(client.getState(id, { at: 1 }))).toBe('ErrPruned');
      expect(JSON.stringify(await client.getState(id))).not.toContain(secret);
      expect((await client.verify(id)).ok).toBe(true);
    });

    it('two workers racing a clear and an add: the add lands in one life, whole, never mixed', async () => {
      for (let round = 0; round < 6; round++) {
        const id = fresh();
        const a = world.session(id);
        const b = world.session(id);
        await a.addItems([user('old')]);

        await Promise.all([a.clearSession(), b.addItems([user('new')])]);

        const items = await world.session(id).getItems();
        const { events } = await world.client().readEvents(id);
        // Either the add came first (and was cleared with the old item) or after the clear.
        if (items.length === 0) expect(events).toEqual([]);
        else {
          expect(items).toEqual([user('new')]);
          expect(events).toHaveLength(1);
        }
        expect(await refusal(world.client().getState(id, { at: 1 }))).toBe('ErrPruned');
      }
    });
  });
}
