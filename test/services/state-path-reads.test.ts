import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { chunkKey, chunkPrefix } from '../../shared/chain/storage-keys.js';
import { verifyStateProof } from '../../shared/client/state-proofs.js';
import type { JsonValue } from '../../shared/domain/canonical.js';
import { NotFoundError, PrunedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { proveState, type StateProof, walk } from '../../shared/domain/state-v2/index.js';
import type { Ledger, LedgerSettings } from '../../shared/ledger/ledger.js';
import { readStateValue, type StateValue } from '../../shared/state/state-read.js';
import { meteredLedger } from '../support/chunk-world.js';
import { batch, compactionWorld, manualClock, settle } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 12, partial reads: `GET .../state?at=&path=` of a v2 state stored as chunks reads only
 * the chunks on the path (plus the root object), verified against the digest the chain
 * records, and with `proof` answers the same Merkle path a whole hydration gives; a warm head
 * state answers with no object read; deltas after the base fall back to hydration.
 */

vi.setConfig({ testTimeout: 240_000 });

const T = 'acme';
const OTHER = 'globex';
const MESSAGES = Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 ? 'ai' : 'user', i }));
const NOTES = Object.fromEntries(
  Array.from({ length: 400 }, (_, i) => [`k${i}`, `note ${i}`.padEnd(40, '.')]),
);
const DOC = 'd'.repeat(600 * 1024); // a long string: a node of two pages
const SEED: DeltaOp[] = [
  { op: 'set', path: '/messages', value: MESSAGES },
  { op: 'set', path: '/meta', value: { title: 'chat', tags: ['a', 'b'] } },
  { op: 'set', path: '/notes', value: NOTES },
  { op: 'set', path: '/doc', value: DOC },
];
const PATHS = ['/messages/0', '/messages/3', '/messages/9999', '/meta/tags/1', '/notes/k150'];

const put = async (ledger: Ledger, tenant: string, stream: string, ops: DeltaOp[]) => {
  const { stateDigest } = await ledger.appender.readHead(tenant, stream);
  return ledger.checkpoints.checkpoint({ tenant, stream, ops, baseDigest: stateDigest });
};

/** The state digest the verified chain records at `seq` (a delta or a fork event). */
const recorded = async (ledger: Ledger, tenant: string, stream: string, seq: number) => {
  const [event] = (await ledger.reader.readEvents(tenant, stream, { from: seq, limit: 1 })).events;
  if (!event) throw new Error(`no event at ${seq}`);
  return (event.payload as { stateDigest: string }).stateDigest;
};

describe.each(allStores.filter((f) => f.enabled))('reads by path on $name', (factory) => {
  let stores: StorePair;
  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  /** A new process over the stores: cold chunk cache, no warm state. */
  const fresh = (settings: LedgerSettings = {}) => meteredLedger(stores, settings);
  const read = (
    ledger: Ledger,
    req: { path: string; at?: number; proof?: boolean; tenant?: string; stream?: string },
  ) => readStateValue(ledger.states, { tenant: T, stream: 'chat', ...req });

  /** Value and proof as a whole hydration of the state at `at` gives them. */
  const wholeAnswer = async (tenant: string, stream: string, path: string, at?: number) => {
    const { ledger, metered } = fresh();
    const hydrated = await ledger.states.hydrate(tenant, stream, at);
    const proof = proveState(hydrated.working.tree as never, path);
    return { stateDigest: hydrated.stateDigest, proof, chunkGets: metered.m.chunkGets };
  };

  it('reads a path of a chunk base at the head: the root object and the chunks on the path', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED); // seq 1, a base
    const digest = await recorded(ledger, T, 'chat', 1);
    for (const path of PATHS) {
      const reader = fresh();
      const got = await read(reader.ledger, { path, proof: true });
      // Root chunk, the array's root, a level-1 page, a level-0 page: 4 chunks, + the root object
      // and the head's segment (its state digest checked against the delta there).
      expect(reader.metered.m.chunkGets, path).toBeLessThanOrEqual(5);
      expect(reader.metered.m.gets - reader.metered.m.chunkGets, path).toBe(2);
      const whole = await wholeAnswer(T, 'chat', path);
      expect(whole.chunkGets).toBeGreaterThan(150);
      expect(got).toEqual({
        seq: 1,
        stateDigest: digest,
        digestVersion: 2,
        path,
        value: whole.proof.value,
        proof: whole.proof,
      });
      expect(verifyStateProof(got.proof as StateProof, digest)).toEqual({
        ok: true,
        value: whole.proof.value,
      });
      const plain = fresh();
      expect(await read(plain.ledger, { path })).toEqual({ ...got, proof: undefined });
      expect(plain.metered.m.chunkGets).toBeLessThanOrEqual(5);
    }
    // A path to a node reads the node's own chunks too, and only those.
    const doc = fresh();
    const long = await read(doc.ledger, { path: '/doc', proof: true });
    expect(long.value).toBe(DOC);
    expect(doc.metered.m.chunkGets).toBe(4); // the state's root, the string's root, 2 pages
    expect(verifyStateProof(long.proof as StateProof, digest).ok).toBe(true);
  });

  it('reads a past seq at its base: its event, its root object and the chunks on the path', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/messages/3', value: { edited: true } }]);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/turn', value: 3 }]);
    const [at1, at2] = [await recorded(ledger, T, 'chat', 1), await recorded(ledger, T, 'chat', 2)];
    const reader = fresh();
    const past = await read(reader.ledger, { path: '/messages/3', at: 1, proof: true });
    expect(reader.metered.m.chunkGets).toBeLessThanOrEqual(5);
    expect(reader.metered.m.gets - reader.metered.m.chunkGets).toBeLessThanOrEqual(2);
    expect(past).toMatchObject({ seq: 1, stateDigest: at1, value: MESSAGES[3] });
    expect(past.proof).toEqual((await wholeAnswer(T, 'chat', '/messages/3', 1)).proof);
    expect(verifyStateProof(past.proof as StateProof, at1).ok).toBe(true);
    expect(verifyStateProof(past.proof as StateProof, at2).ok).toBe(false);
    const edited = await read(fresh().ledger, { path: '/messages/3', at: 2, proof: true });
    expect(edited).toMatchObject({ seq: 2, stateDigest: at2, value: { edited: true } });
    expect(verifyStateProof(edited.proof as StateProof, at2).ok).toBe(true);
  });

  it('reads a fork stored as chunks by path without hydrating it', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED);
    await ledger.checkpoints.fork({ tenant: T, source: 'chat', at: 1, newStreamId: 'branch' });
    const digest = await recorded(ledger, T, 'branch', 1);
    const reader = fresh();
    const got = await read(reader.ledger, {
      stream: 'branch',
      path: '/messages/9999',
      proof: true,
    });
    expect(reader.metered.m.chunkGets).toBeLessThanOrEqual(5);
    // Its segment, for the fork's root and for the head's state digest.
    expect(reader.metered.m.gets - reader.metered.m.chunkGets).toBeLessThanOrEqual(2);
    expect(got).toMatchObject({ seq: 1, stateDigest: digest, value: MESSAGES[9999] });
    expect(verifyStateProof(got.proof as StateProof, digest).ok).toBe(true);
  });

  it('answers from the warm head state with no object read; after deltas a cold read hydrates to the same answer', async () => {
    const { ledger, metered } = meteredLedger(stores, { snapshotEvery: 25 });
    await put(ledger, T, 'chat', SEED);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/messages/3', value: { edited: 1 } }]);
    const cache = { cache: ledger.checkpoints.cache };
    const req = { tenant: T, stream: 'chat', path: '/messages/3', proof: true };
    metered.reset();
    const warm = await readStateValue(ledger.states, req, cache);
    expect(metered.m.gets).toBe(0);
    const digest = await recorded(ledger, T, 'chat', 2);
    expect(warm).toMatchObject({ seq: 2, stateDigest: digest, value: { edited: 1 } });
    expect(verifyStateProof(warm.proof as StateProof, digest).ok).toBe(true);
    // Another process has no warm state and a base with deltas after it: whole hydration.
    const cold = await readStateValue(fresh().ledger.states, req);
    expect(cold).toEqual(warm);
    // The read left the warm state as it was: the next checkpoint goes on from it.
    await put(ledger, T, 'chat', [{ op: 'set', path: '/messages/3', value: { edited: 2 } }]);
    metered.reset();
    const next = await readStateValue(ledger.states, req, cache);
    expect(metered.m.gets).toBe(0);
    expect(next.value).toEqual({ edited: 2 });
    expect(verifyStateProof(next.proof as StateProof, next.stateDigest).ok).toBe(true);
    expect(next).toEqual(await readStateValue(fresh().ledger.states, req));
    // A past seq is not the warm head's state.
    const past = await readStateValue(ledger.states, { ...req, at: 1 }, cache);
    expect(past.value).toEqual(MESSAGES[3]);
  });

  it('replays deltas after the base on a partial tree: reads follow the touched paths, not the state', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 25 });
    await put(ledger, T, 'chat', SEED); // seq 1: deltas 1..24 ride on no base; write one here
    await ledger.states.writeBaseAt(T, 'chat', 1);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/turn', value: 2 }]);
    await put(ledger, T, 'chat', [
      { op: 'set', path: '/meta/title', value: 'renamed' },
      { op: 'set', path: '/notes/k5', value: 'a note edited after the base' },
      { op: 'delete', path: '/notes/k7' },
    ]);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/turn', value: 4 }]);
    for (const at of [4, 3, 2]) {
      const digest = await recorded(ledger, T, 'chat', at);
      for (const path of ['/messages/3', '/notes/k5', '/meta', '/turn']) {
        const reader = fresh();
        const got = await read(reader.ledger, { path, at: at === 4 ? undefined : at, proof: true });
        // The state root, the edited notes object whole (its root and ~25 pages: an edited
        // container's entries are loaded), the path: some 30 of 190-odd chunks.
        expect(reader.metered.m.chunkGets, `${at} ${path}`).toBeLessThanOrEqual(40);
        const whole = await wholeAnswer(T, 'chat', path, at);
        expect(whole.chunkGets).toBeGreaterThan(150);
        expect(got).toEqual({
          seq: at,
          stateDigest: digest,
          digestVersion: 2,
          path,
          value: whole.proof.value,
          proof: whole.proof,
        });
        expect(verifyStateProof(got.proof as StateProof, digest).ok, `${at} ${path}`).toBe(true);
        const plain = await read(fresh().ledger, { path, at: at === 4 ? undefined : at });
        expect(plain.value).toEqual(whole.proof.value);
      }
    }
    // An op on the long array loads all of that array's pages (its level-0 entries): most of
    // this state, though still not the long string beside it.
    await put(ledger, T, 'chat', [{ op: 'set', path: '/messages/-', value: { role: 'ai' } }]);
    const reader = fresh();
    const got = await read(reader.ledger, { path: '/messages/10000', proof: true });
    expect(got.value).toEqual({ role: 'ai' });
    const appended = await wholeAnswer(T, 'chat', '/messages/10000');
    expect(got.proof).toEqual(appended.proof);
    expect(reader.metered.m.chunkGets).toBeLessThan(appended.chunkGets);
    // A branch back to an older seq (baseSeq) is hydrated: the same answer either way.
    const at2 = await recorded(ledger, T, 'chat', 2);
    await ledger.checkpoints.checkpoint({
      tenant: T,
      stream: 'chat',
      ops: [{ op: 'set', path: '/turn', value: 'branch' }],
      baseDigest: at2,
      baseSeq: 2,
    });
    const branch = await read(fresh().ledger, { path: '/meta/title', proof: true });
    expect(branch.value).toBe('chat');
    expect(branch.proof).toEqual((await wholeAnswer(T, 'chat', '/meta/title')).proof);
  });

  it('fails closed on a tampered chunk on the path, and never reads one off it', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED);
    const digest = await recorded(ledger, T, 'chat', 1);
    // The level-0 page holding /messages/9999 (the last node on its path).
    const seen: string[] = [];
    const source = async (hash: string) => {
      seen.push(hash);
      return (await stores.objects.get(chunkKey(T, hash)))?.body;
    };
    await walk(digest, '/messages/9999', source);
    const page = seen.at(-1) as string;
    await stores.tamper(chunkKey(T, page), (b) => {
      const out = Uint8Array.from(b);
      out[out.length - 1] = (out[out.length - 1] ?? 0) ^ 1;
      return out;
    });
    const ok = await read(fresh().ledger, { path: '/messages/3', proof: true });
    expect(verifyStateProof(ok.proof as StateProof, digest)).toEqual({
      ok: true,
      value: MESSAGES[3],
    });
    for (const proof of [true, false]) {
      const reader = fresh();
      await expect(read(reader.ledger, { path: '/messages/9999', proof })).rejects.toBeInstanceOf(
        TamperedLedgerError,
      );
      // Nothing tampered entered the chunk cache.
      expect(reader.ledger.states.chunks.cache.get(T, page)).toBeUndefined();
    }
  });

  it("never reads another tenant's chunks by path, even from a shared chunk cache", async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED);
    await put(ledger, OTHER, 'chat', SEED); // the same state: the same chunk hashes
    const digest = await recorded(ledger, OTHER, 'chat', 1);
    const reader = fresh();
    const theirs = await read(reader.ledger, { tenant: OTHER, path: '/messages/3', proof: true });
    expect(theirs.value).toEqual(MESSAGES[3]);
    const keys = reader.metered.getKeys;
    expect(keys.length).toBeLessThanOrEqual(6);
    expect(keys.every((k) => k.startsWith(`t/${OTHER}/`))).toBe(true);
    // Delete globex's chunks on the path: acme holds the same ones, and this process has
    // them cached for acme, yet globex's read fails closed.
    const seen: string[] = [];
    await walk(digest, '/messages/3', async (hash) => {
      seen.push(hash);
      return (await stores.objects.get(chunkKey(OTHER, hash)))?.body;
    });
    for (const hash of seen) await stores.objects.delete(chunkKey(OTHER, hash));
    const shared = fresh();
    expect((await read(shared.ledger, { path: '/messages/3' })).value).toEqual(MESSAGES[3]);
    for (const proof of [true, false]) {
      await expect(
        read(shared.ledger, { tenant: OTHER, path: '/messages/3', proof }),
      ).rejects.toBeInstanceOf(TamperedLedgerError);
    }
    expect(shared.metered.getKeys.some((k) => k.startsWith(chunkPrefix(OTHER)))).toBe(true);
  });

  it('answers ErrNotFound for a path the state does not hold, reading only the chunks on the way', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1 });
    await put(ledger, T, 'chat', SEED);
    for (const path of ['/messages/10000', '/messages/03', '/nope', '/meta/tags/2', '/doc/0']) {
      for (const proof of [true, false]) {
        const reader = fresh();
        await expect(read(reader.ledger, { path, proof }), path).rejects.toBeInstanceOf(
          NotFoundError,
        );
        expect(reader.metered.m.chunkGets, path).toBeLessThanOrEqual(5);
      }
    }
  });

  it('refuses a seq below the pruning point and reads from the base at it, as hydration does', async () => {
    const clock = manualClock();
    const world = compactionWorld(stores, {}, clock);
    const { ledger } = world;
    for (let i = 1; i <= 8; i++) {
      await ledger.appender.append({ tenant: T, stream: 'chat', events: batch(`e${i}`) });
      await put(ledger, T, 'chat', [{ op: 'set', path: `/k${i}`, value: i }]);
      clock.advance(1000);
    }
    clock.advance(86_400_000 - 500);
    await ledger.appender.append({ tenant: T, stream: 'chat', events: batch('late') });
    await ledger.retention.set(T, 'chat', { pruneAfterMs: 86_400_000 });
    await settle(world, (ms) => clock.advance(ms));
    const { prunedSeq } = await ledger.retention.get(T, 'chat');
    expect(prunedSeq).toBe(16);
    await put(ledger, T, 'chat', [{ op: 'set', path: '/k9', value: 9 }]); // seq 18
    await expect(read(fresh().ledger, { path: '/k1', at: 15 })).rejects.toBeInstanceOf(PrunedError);
    for (const at of [16, 17, 18]) {
      const reader = fresh().ledger;
      const hydrate = vi.spyOn(reader.states, 'hydrate');
      const got = await read(reader, { path: '/k8', at, proof: true });
      expect(hydrate, `at ${at}`).not.toHaveBeenCalled(); // the base at 16, then a delta
      expect(got).toMatchObject({ seq: at, value: 8 });
      expect(got.proof).toEqual((await wholeAnswer(T, 'chat', '/k8', at)).proof);
      expect(verifyStateProof(got.proof as StateProof, got.stateDigest).ok).toBe(true);
    }
    expect((await read(fresh().ledger, { path: '/k9' })).value).toBe(9);
  });

  it('answers a v2 stream whose base is a JSON snapshot object from that object alone', async () => {
    const { ledger } = meteredLedger(stores, { snapshotEvery: 1, snapshotEncoding: 'jcs' });
    await put(ledger, T, 'chat', [{ op: 'set', path: '/messages', value: MESSAGES.slice(0, 500) }]);
    const reader = fresh();
    const got: StateValue = await read(reader.ledger, { path: '/messages/7', proof: true });
    expect(reader.metered.m.gets).toBe(2); // the object, and the head's segment (its digest)
    expect(got.value as JsonValue).toEqual(MESSAGES[7]);
    expect(verifyStateProof(got.proof as StateProof, got.stateDigest).ok).toBe(true);
  });
});
