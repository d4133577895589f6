import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { chunkKey, chunkPrefix } from '../../shared/chain/storage-keys.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { TamperedLedgerError } from '../../shared/domain/errors.js';
import { applyOps, type DeltaOp, type JsonObject } from '../../shared/domain/state.js';
import type { Ledger } from '../../shared/ledger/ledger.js';
import { meteredLedger } from '../support/chunk-world.js';
import { keysUnder } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';
import { choiceArb, deltaFor, stateArb } from '../unit/state-v2-arbitraries.js';

/**
 * Issue 12, snapshots v2: base snapshots as content-addressed chunks under the tenant plus one
 * root object; a base writes only the chunks that are new; chunks are shared by the streams
 * of a tenant and never by two tenants; hydration reads them concurrently through a chunk
 * cache and verifies each one.
 */

// Megabytes of state through the emulators on a shared machine.
vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';

/** ~`n` KiB of chat: messages of 1 KiB each (every one its own leaf chunk page entry). */
const messages = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    text: `message ${from + i} `.padEnd(1000, '.'),
  }));

const put = async (ledger: Ledger, stream: string, ops: DeltaOp[]) => {
  const { stateDigest } = await ledger.appender.readHead(T, stream);
  return ledger.checkpoints.checkpoint({ tenant: T, stream, ops, baseDigest: stateDigest });
};

describe.each(allStores.filter((f) => f.enabled))('snapshots v2 on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('writes a base as tenant chunks plus a format-2 root object, then only the new chunks', async () => {
    const { ledger, metered } = meteredLedger(stores, { snapshotEvery: 2 });
    await put(ledger, 'chat', [{ op: 'set', path: '/messages', value: messages(200) }]);
    metered.reset();
    await put(ledger, 'chat', [{ op: 'set', path: '/turn', value: 1 }]); // base at 2
    const first = metered.putKeys.filter((k) => k.startsWith(chunkPrefix(T)));
    expect(first.length).toBeGreaterThan(4);
    const [root] = await keysUnder(stores.objects, `t/${T}/s/chat/snap/`);
    const body = (await stores.objects.get(root ?? ''))?.body ?? new Uint8Array();
    expect(Buffer.from(body.subarray(0, 8)).toString('latin1')).toBe('HEFSNAP\x02');
    expect(body.length).toBeLessThan(1024);
    // Two more deltas append one message: the next base puts the last page and the roots.
    await put(ledger, 'chat', [
      { op: 'set', path: '/messages/-', value: messages(1, 200)[0] ?? null },
    ]);
    metered.reset();
    await put(ledger, 'chat', [{ op: 'set', path: '/turn', value: 2 }]); // base at 4
    const second = metered.putKeys.filter((k) => k.startsWith(chunkPrefix(T)));
    expect(second.length).toBeGreaterThan(0);
    expect(second.length).toBeLessThanOrEqual(4);
    expect(metered.m.putBytes).toBeLessThan(80 * 1024); // the state is ~200 KiB
    expect((await ledger.states.hydrate(T, 'chat')).state).toMatchObject({ turn: 2 });
    // A new process hydrates from the base's chunks and writes nothing.
    const fresh = meteredLedger(stores, { snapshotEvery: 2 });
    const at3 = await fresh.ledger.states.hydrate(T, 'chat', 3);
    expect((at3.state.messages as unknown[]).length).toBe(201);
    expect(fresh.metered.m.puts).toBe(0);
  });

  it('shares chunks across the streams of a tenant, never across tenants', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    const state = messages(50);
    await put(ledger, 'a', [{ op: 'set', path: '/m', value: state }]);
    const once = await keysUnder(stores.objects, chunkPrefix(T));
    await put(ledger, 'b', [{ op: 'set', path: '/m', value: state }]);
    expect(await keysUnder(stores.objects, chunkPrefix(T))).toEqual(once);
    // Another tenant with the same state: its own chunks, under its own prefix.
    const other = 'globex';
    const base = (await ledger.appender.readHead(other, 'a')).stateDigest;
    await ledger.checkpoints.checkpoint({
      tenant: other,
      stream: 'a',
      ops: [{ op: 'set', path: '/m', value: state }],
      baseDigest: base,
    });
    const theirs = await keysUnder(stores.objects, chunkPrefix(other));
    expect(theirs.map((k) => k.slice(chunkPrefix(other).length))).toEqual(
      once.map((k) => k.slice(chunkPrefix(T).length)),
    );
    // Deleting one tenant's chunks leaves the other's state readable in a new process.
    for (const key of once) await stores.objects.delete(key);
    const fresh = meteredLedger(stores, { snapshotEvery: 1 });
    expect((await fresh.ledger.states.hydrate(other, 'a')).state).toEqual({ m: state });
    await expect(fresh.ledger.states.hydrate(T, 'b')).rejects.toBeInstanceOf(TamperedLedgerError);
  });

  it('keeps reading v1 snapshots and writes v2 from then on', async () => {
    const v1 = meteredLedger(stores, { snapshotEvery: 2, snapshotEncoding: 'jcs' });
    await put(v1.ledger, 's', [{ op: 'set', path: '/a', value: messages(3) }]);
    await put(v1.ledger, 's', [{ op: 'set', path: '/b', value: 1 }]);
    expect(await keysUnder(stores.objects, chunkPrefix(T))).toEqual([]);
    const v2 = meteredLedger(stores, { snapshotEvery: 2 });
    expect((await v2.ledger.states.hydrate(T, 's', 2)).baseSeq).toBe(2);
    await put(v2.ledger, 's', [{ op: 'set', path: '/c', value: 2 }]);
    await put(v2.ledger, 's', [{ op: 'set', path: '/d', value: 3 }]);
    expect((await keysUnder(stores.objects, chunkPrefix(T))).length).toBeGreaterThan(0);
    const fresh = meteredLedger(stores, { snapshotEvery: 2 });
    for (const seq of [1, 2, 3, 4]) await fresh.ledger.states.hydrate(T, 's', seq);
    expect((await fresh.ledger.states.hydrate(T, 's')).state).toMatchObject({ b: 1, c: 2, d: 3 });
    expect(await fresh.ledger.verifier.verify(T, 's')).toMatchObject({ ok: true, seq: 4 });
  });

  it('hydrates through a bounded, verified chunk cache', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, 'big', [{ op: 'set', path: '/m', value: messages(600) }]);
    const reader = meteredLedger(stores, { snapshotEvery: 1 });
    const cold = await reader.ledger.states.hydrate(T, 'big');
    expect((cold.state.m as unknown[]).length).toBe(600);
    const chunks = (await keysUnder(stores.objects, chunkPrefix(T))).length;
    expect(reader.metered.m.chunkGets).toBe(chunks);
    expect(reader.metered.m.maxInFlight).toBeGreaterThan(1);
    expect(reader.metered.m.maxInFlight).toBeLessThanOrEqual(16);
    reader.metered.reset();
    await reader.ledger.states.hydrate(T, 'big');
    expect(reader.metered.m.chunkGets).toBe(0); // all from the cache
  });

  it('fails closed on a tampered chunk (ErrTamperedLedger)', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, 'x', [{ op: 'set', path: '/m', value: messages(100) }]);
    const keys = await keysUnder(stores.objects, chunkPrefix(T));
    const victim = keys[0] ?? '';
    await stores.tamper(victim, (b) => {
      const c = Uint8Array.from(b);
      c[c.length - 3] = (c[c.length - 3] ?? 0) ^ 1;
      return c;
    });
    const fresh = meteredLedger(stores, { snapshotEvery: 1 });
    const err = await fresh.ledger.states.hydrate(T, 'x').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TamperedLedgerError);
    expect(await fresh.ledger.verifier.verify(T, 'x')).toMatchObject({ ok: false });
    expect(chunkKey(T, 'ab')).toBe(`t/${T}/chunks/ab`);
  });

  it('hydrates every seq to a plain fold of the ops (property)', async () => {
    const runs = factory.name === 'aws' ? 3 : 8;
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 3 }), { maxLength: 9 }),
        fc.integer({ min: 1, max: 4 }),
        async (start, deltas, every) => {
          const stream = `p${++n}`;
          const { ledger } = meteredLedger(stores, { snapshotEvery: every });
          const folds: JsonObject[] = [];
          let model: JsonObject = {};
          const first: DeltaOp[] = [{ op: 'set', path: '/start', value: start }];
          for (const ops of [first, ...deltas.map((c) => deltaFor(model, c))]) {
            const next = (() => {
              try {
                return applyOps(structuredClone(model), ops);
              } catch {
                return undefined;
              }
            })();
            if (!next) continue;
            await put(ledger, stream, ops);
            model = next;
            folds.push(structuredClone(model));
          }
          const fresh = meteredLedger(stores, { snapshotEvery: every });
          for (const [i, want] of folds.entries()) {
            const got = (await fresh.ledger.states.hydrate(T, stream, i + 1)).state;
            expect(canonicalJson(got)).toBe(canonicalJson(want)); // JSON has no -0
          }
        },
      ),
      { numRuns: runs },
    );
  });
});
