import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { headKey } from '../../shared/chain/storage-keys.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { decodeAnySnapshot } from '../../shared/domain/snapshot.js';
import {
  applyOps,
  type DeltaOp,
  type JsonObject,
  stateDigestOf,
} from '../../shared/domain/state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from '../../shared/domain/state-v2/index.js';
import { escapeSegment } from '../../shared/domain/state-v2/pointer.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { Checkpointer, StateCache } from '../../shared/state/checkpoint.js';
import { allStores, type StorePair } from '../support/stores.js';
import { choiceArb, deltaFor, stateArb } from '../unit/state-v2-arbitraries.js';

/**
 * State digest v2 on the commit path (docs/records-v2.md): a stream created now records
 * `digestVersion: 2` on its head, and every checkpoint, hydration, base snapshot, fork and
 * verification uses the Merkle digest of docs/state-v2.md. (v1 streams: test/unit/v1-fixture.)
 */

const K = 3;

describe.each(allStores.filter((f) => f.enabled))('state digest v2 on $name', (factory) => {
  let stores: StorePair;
  let ledger: Ledger;
  const models = new Map<string, JsonObject>();

  const checkpoint = async (tenant: string, stream: string, ops: DeltaOp[]) => {
    const key = `${tenant}/${stream}`;
    const model = applyOps(structuredClone(models.get(key) ?? {}), ops);
    const baseDigest = (await ledger.appender.readHead(tenant, stream)).stateDigest;
    const result = await ledger.checkpoints.checkpoint({ tenant, stream, ops, baseDigest });
    models.set(key, model);
    return { result, model };
  };

  beforeEach(async () => {
    stores = await factory.make();
    ledger = new Ledger({ ...stores, clock: { now: () => Date.now() } }, { snapshotEvery: K });
    models.clear();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  it('records digestVersion 2 on a new stream and digests every checkpoint with v2', async () => {
    const byTenant = new Map<string, string[]>();
    for (const tenant of ['acme', 'globex']) {
      const digests: string[] = [];
      byTenant.set(tenant, digests);
      for (let turn = 1; turn <= 2 * K + 1; turn++) {
        const { result, model } = await checkpoint(tenant, 'run', [
          { op: 'set', path: `/k${turn}`, value: { turn, tenant } },
          { op: 'set', path: '/turn', value: turn },
        ]);
        expect(result.stateDigest).toBe(digestV2(model));
        expect(result.stateDigest).not.toBe(stateDigestOf(model));
        digests.push(result.stateDigest);
      }
      const head = await stores.records.get(headKey(tenant, 'run'));
      expect(head).toMatchObject({ digestVersion: 2, stateDigest: digests.at(-1) });
      for (const [i, digest] of digests.entries()) {
        const at = await ledger.states.hydrate(tenant, 'run', i + 1);
        expect(at.stateDigest).toBe(digest);
        expect(digestV2(at.state)).toBe(digest);
      }
      expect(await ledger.reader.verify(tenant, 'run')).toMatchObject({ ok: true });
    }
    // The base snapshot at K (snapshots v2: a root naming tenant chunks) names the state by
    // its v2 Merkle digest, which is the stream's state digest there.
    const listed = await stores.objects.list('t/acme/s/run/snap/');
    const key = listed.items[0]?.key as string;
    const stored = await stores.objects.get(key);
    const stateDigest = key.split('-').at(-1) as string;
    const snapshot = decodeAnySnapshot(stored?.body as Uint8Array, {
      tenant: 'acme',
      stream: 'run',
      seq: K,
      stateDigest,
      digestVersion: 2,
      stateSeq: K, // a checkpoint every turn: the base at K is bound to the delta at K
    });
    expect('root' in snapshot && snapshot.root.digest).toBe(stateDigest);
    expect(byTenant.get('acme')?.[K - 1]).toBe(stateDigest);
  });

  it('starts a new stream from the v2 digest of {} and traps a v1 digest of the same state', async () => {
    expect((await ledger.appender.readHead('acme', 'new')).stateDigest).toBe(EMPTY_STATE_DIGEST_V2);
    const { model } = await checkpoint('acme', 'new', [{ op: 'set', path: '/a', value: [1, 2] }]);
    const ops: DeltaOp[] = [{ op: 'set', path: '/b', value: true }];
    await expect(
      ledger.checkpoints.checkpoint({
        tenant: 'acme',
        stream: 'new',
        ops,
        baseDigest: stateDigestOf(model),
      }),
    ).rejects.toMatchObject({ code: 'ErrDivergenceDetected' });
    // A stateDigest the client computed with v1 is refused too, and nothing was written.
    await expect(
      ledger.checkpoints.checkpoint({
        tenant: 'acme',
        stream: 'new',
        ops,
        baseDigest: digestV2(model),
        stateDigest: stateDigestOf(applyOps(structuredClone(model), ops)),
      }),
    ).rejects.toMatchObject({ code: 'ErrDivergenceDetected' });
    expect((await ledger.appender.readHead('acme', 'new')).seq).toBe(1);
  });

  it('forks a v2 stream into a v2 stream and branches from {} with the v2 empty digest', async () => {
    for (let turn = 1; turn <= K + 1; turn++) {
      await checkpoint('acme', 'src', [{ op: 'set', path: `/m${turn}`, value: turn }]);
    }
    const at = await ledger.states.hydrate('acme', 'src', 2);
    const fork = await ledger.checkpoints.fork({
      tenant: 'acme',
      source: 'src',
      at: 2,
      newStreamId: 'copy',
    });
    expect(fork.stateDigest).toBe(digestV2(at.state));
    expect(await stores.records.get(headKey('acme', 'copy'))).toMatchObject({ digestVersion: 2 });
    expect(await ledger.reader.verify('acme', 'copy')).toMatchObject({ ok: true });
    const branched = await ledger.checkpoints.checkpoint({
      tenant: 'acme',
      stream: 'src',
      ops: [{ op: 'set', path: '/x', value: 1 }],
      baseDigest: EMPTY_STATE_DIGEST_V2,
      baseSeq: 0,
    });
    expect(branched.stateDigest).toBe(digestV2({ x: 1 }));
    expect((await ledger.states.hydrate('acme', 'src')).state).toEqual({ x: 1 });
  });
});

describe('the warm state cache (state digest v2)', () => {
  const world = (cache: StateCache) => {
    const objects = new MemoryObjectStore();
    const records = new MemoryRecordStore();
    const ledger = new Ledger(
      { objects, records, clock: { now: () => Date.now() } },
      {
        snapshotEvery: 4,
      },
    );
    const { appender, states, reader, labels } = ledger;
    return { ledger, checkpoints: new Checkpointer({ appender, states, reader, labels, cache }) };
  };

  it('digests random deltas incrementally exactly as from scratch, warm and cold', async () => {
    await fc.assert(
      fc.asyncProperty(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 5 }), { maxLength: 8 }),
        async (initial, deltas) => {
          // One process keeps the Merkle tree warm across checkpoints; the other has no cache
          // room, so every checkpoint hydrates and builds the tree once (cold).
          const cache = new StateCache();
          const warm = world(cache);
          const cold = world(new StateCache(0));
          let model: JsonObject = {};
          const first: DeltaOp[] = Object.entries(initial).map(([k, value]) => ({
            op: 'set',
            path: `/${escapeSegment(k)}`,
            value,
          }));
          const last: DeltaOp[] = [{ op: 'set', path: '/last', value: 1 }];
          for (const ops of [first, ...deltas, last]) {
            const delta =
              ops === first || ops === last ? (ops as DeltaOp[]) : deltaFor(model, ops as never);
            if (delta.length === 0) continue;
            let expected: JsonObject | undefined;
            try {
              expected = applyOps(structuredClone(model), delta);
            } catch {
              expected = undefined;
            }
            for (const w of [warm, cold]) {
              if (expected === undefined) {
                // Refused as v1 refuses it; the half-applied tree is dropped, not cached.
                const baseDigest = (await w.ledger.appender.readHead('t', 's')).stateDigest;
                await expect(
                  w.checkpoints.checkpoint({ tenant: 't', stream: 's', ops: delta, baseDigest }),
                ).rejects.toMatchObject({ code: 'ErrInvalidDelta' });
                continue;
              }
              const baseDigest = (await w.ledger.appender.readHead('t', 's')).stateDigest;
              const result = await w.checkpoints.checkpoint({
                tenant: 't',
                stream: 's',
                ops: delta,
                baseDigest,
              });
              expect(result.stateDigest).toBe(digestV2(expected));
            }
            if (expected !== undefined) model = expected;
          }
          const head = await warm.ledger.appender.readHead('t', 's');
          // The warm entry is the Merkle tree itself, settled to the head's digest.
          const entry = cache.take('t', 's', head.stateDigest);
          expect(entry?.tree?.digest()).toBe(head.stateDigest);
          // (As canonical JSON: -0 is 0 once stored, as RFC 8785 writes it.)
          expect(canonicalJson(entry?.state ?? null)).toBe(canonicalJson(model));
          const hydrated = await cold.ledger.states.hydrate('t', 's');
          expect(canonicalJson(hydrated.state)).toBe(canonicalJson(model));
          expect(hydrated.working.tree?.digest()).toBe(digestV2(model));
        },
      ),
      { numRuns: 25 },
    );
  });
});
