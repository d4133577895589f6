import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toHead } from '../../shared/chain/layout.js';
import { Reader } from '../../shared/chain/reader.js';
import { headKey, witnessKey } from '../../shared/chain/storage-keys.js';
import { Appender, type AppendRequest, type CommitStep } from '../../shared/commit/append.js';
import { CrashInjectedError } from '../../shared/domain/errors.js';
import type { EventInput } from '../../shared/domain/event.js';
import { eventLeafHash, hashToHex, MemoryTree } from '../../shared/domain/merkle/index.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The tree in the commit (tree-commit.ts, append.ts step 3): the head's frontier moves with
 * its seq in the same transaction, every append answers its receipt, an idempotent retry the
 * original one, and commits that read tree or witness fields another writer changed since
 * commit again on the fresh head. Checked against a naive tree built in the test.
 */

const batch = (label: string, n = 1): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

const crashAt = (step: CommitStep) => (at: CommitStep) => {
  if (at === step) throw new CrashInjectedError(at);
};

describe.each(allStores.filter((f) => f.enabled))('the tree in the commit on $name', (factory) => {
  let stores: StorePair;
  let now = Date.now();
  const clock = { now: () => now };
  const ring = new KeyRing(new FakeSigner('tree-commit'));
  const keys = ring.verifier();
  let appender: Appender;
  let reader: Reader;
  const append = (req: Partial<AppendRequest> & Pick<AppendRequest, 'events'>) =>
    appender.append({ tenant: 'acme', stream: 'run-1', ...req });
  const head = async (tenant = 'acme', stream = 'run-1') =>
    toHead((await stores.records.get(headKey(tenant, stream))) ?? expect.fail('no head'));
  /** The naive tree of a stream: every event read (verified), leaf by leaf. */
  const naive = async (tenant = 'acme', stream = 'run-1') => {
    const tree = new MemoryTree();
    const page = await reader.readEvents(tenant, stream, { limit: 10_000 });
    for (const e of page.events) tree.append(eventLeafHash(e.hash));
    return tree;
  };

  beforeEach(async () => {
    stores = await factory.make();
    appender = new Appender({ ...stores, clock, signer: ring.current });
    reader = new Reader(stores);
  });
  afterEach(() => stores.cleanup());

  it('moves the frontier with the head and answers a receipt of the tree after each append', async () => {
    for (const [stream, sizes] of [
      ['run-1', [1, 3, 1, 4, 7]],
      ['run-2', [2, 2]],
    ] as const) {
      for (const [i, n] of sizes.entries()) {
        now += 1000;
        const { response } = await append({ stream, events: batch(`${stream}-${i}`, n) });
        const tree = await naive('acme', stream);
        const h = await head('acme', stream);
        expect(h.treeBase).toBe(0);
        expect(h.treeSize).toBe(response.lastSeq);
        expect(h.frontier).toEqual(tree.frontier().map(hashToHex));
        const receipt = response.treeHead ?? expect.fail('no receipt');
        expect(keys.verify(receipt).ok).toBe(true);
        expect(receipt).toMatchObject({
          tenant: 'acme',
          streamId: stream,
          treeBase: 0,
          treeSize: response.lastSeq,
          rootHash: hashToHex(tree.root()),
          timestamp: now,
        });
        expect(h.treeHead).toEqual(receipt);
      }
    }
  });

  it('answers an idempotent retry with the original receipt', async () => {
    const idempotency = { key: 'k-1', digest: 'a'.repeat(64) };
    const first = await append({ events: batch('a', 2), idempotency });
    now += 60_000;
    await append({ events: batch('b', 3) });
    const retry = await append({ events: batch('a', 2), idempotency });
    expect(retry.replayed).toBe(true);
    expect(retry.response.treeHead).toEqual(first.response.treeHead);
    expect(retry.response.treeHead?.treeSize).toBe(2);
  });

  it('gives a batch rolled forward by another writer its own receipt on retry', async () => {
    const idempotency = { key: 'crash-1', digest: 'c'.repeat(64) };
    const crashing = new Appender({ ...stores, clock, crash: crashAt('segment-written') });
    await expect(
      crashing.append({ tenant: 'acme', stream: 'run-1', events: batch('x', 2), idempotency }),
    ).rejects.toThrow(CrashInjectedError);
    now += 5000; // past the in-flight grace
    const other = await append({ events: batch('y', 1) });
    expect(other.response.treeHead?.treeSize).toBe(3);
    const retry = await append({ events: batch('x', 2), idempotency });
    expect(retry.replayed).toBe(true);
    const receipt = retry.response.treeHead ?? expect.fail('no receipt');
    expect(keys.verify(receipt).ok).toBe(true);
    const tree = await naive();
    expect(receipt).toMatchObject({ treeSize: 2, rootHash: hashToHex(tree.root(2)) });
    expect((await head()).frontier).toEqual(tree.frontier().map(hashToHex));
  });

  it('starts no tree on a stream written before trees (no tree fields on its head)', async () => {
    await append({ events: batch('a', 2) });
    await stores.records.update(headKey('acme', 'run-1'), {
      remove: ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'],
    });
    const { response } = await append({ events: batch('b', 1) });
    expect(response.treeHead).toBeUndefined();
    const h = await head();
    expect(h.seq).toBe(3);
    expect(h.treeSize).toBeUndefined();
  });

  it('commits again on the fresh head when the backfill gave it a tree after the read', async () => {
    await append({ events: batch('a', 2) });
    const legacy = ['treeBase', 'treeSize', 'frontier', 'treeHead', 'witPending'];
    await stores.records.update(headKey('acme', 'run-1'), { remove: legacy });
    const stale = { ...(await appender.readHead('acme', 'run-1')) };
    // The backfill, between our read and our commit:
    const tree = await naive();
    await stores.records.update(headKey('acme', 'run-1'), {
      set: { treeBase: 0, treeSize: 2, frontier: tree.frontier().map(hashToHex) },
    });
    const { response } = await append({ events: batch('b', 3), knownHead: stale });
    const after = await naive();
    expect(response.treeHead?.treeSize).toBe(5);
    expect((await head()).frontier).toEqual(after.frontier().map(hashToHex));
  });

  it('marks the stream for the witness once, and again after the witness cleared it', async () => {
    await append({ events: batch('a', 1) });
    expect(await stores.records.get(witnessKey('acme', 'run-1'))).toBeDefined();
    expect((await head()).witPending).toBe(true);
    await stores.records.delete(witnessKey('acme', 'run-1'));
    await append({ events: batch('b', 1) });
    expect(await stores.records.get(witnessKey('acme', 'run-1'))).toBeUndefined();
    // The witness published seq 2 and cleared the flag after this writer read the head:
    const stale = { ...(await appender.readHead('acme', 'run-1')) };
    await stores.records.update(headKey('acme', 'run-1'), { remove: ['witPending'] });
    await append({ events: batch('c', 1), knownHead: stale });
    expect(await stores.records.get(witnessKey('acme', 'run-1'))).toBeDefined();
    expect((await head()).witPending).toBe(true);
  });
});
