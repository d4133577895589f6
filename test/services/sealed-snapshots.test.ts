import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { snapshotPrefix, streamPk } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { ContentSealedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { compactionWorld, manualClock, settle } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Base snapshots of a stream sealed at rest (docs/privacy.md, Decision 4): the snapshot
 * object is sealed whole under the stream's content key, AAD bound to tenant, stream, kind
 * `snap` and the object's key (its seq), whether the checkpoint path or the compactor's base
 * writer (`writeBaseAt`) wrote it. A marker in a snapshotted state is in no stored byte
 * (whole-JSON bases; chunked bases keep their chunks in the clear, only the root object is
 * sealed); reads round-trip from the base; a sealed base moved to another stream or tenant
 * fails closed; a server without the key store refuses hydration (ErrUnavailable) while
 * /verify passes. On every store.
 */

const MARKER = 'marker-snap-7c2a-secret-answer';
const ring = new KeyRing(new FakeSigner('sealed-snapshots'));
const STREAMS = [
  ['acme', 'run-1'],
  ['acme', 'run-2'],
  ['other', 'run-1'],
] as const;
const CLEAR_MAGIC = Buffer.from('HEFSNAP', 'latin1');

for (const factory of allStores.filter((s) => s.enabled)) {
  for (const snapshotEncoding of ['jcs', 'chunks'] as const) {
    describe(`sealed base snapshots (${snapshotEncoding}) on ${factory.name}`, () => {
      let stores: StorePair;
      let wrapper: MemoryKeyWrapper;
      const clock = manualClock();
      const errors: unknown[] = [];
      const ledger = (keyed = true) =>
        new Ledger(
          {
            ...stores,
            clock,
            keyring: keyed ? new StreamKeyring(stores.records, wrapper) : undefined,
          },
          {
            signing: ring,
            snapshotEvery: 3,
            snapshotEncoding,
            onSnapshotError: (err) => errors.push(err),
          },
        );
      const checkpoint = async (l: Ledger, tenant: string, stream: string, i: number) => {
        const head = await l.appender.readHead(tenant, stream);
        await l.checkpoints.checkpoint({
          tenant,
          stream,
          ops: [
            { op: 'set', path: `/note${i}`, value: `${MARKER} ${tenant}/${stream} ${i}` },
            { op: 'set', path: '/step', value: i },
          ],
          baseDigest: head.stateDigest,
          label: `c${i}`,
        });
      };
      const snapKey = async (tenant: string, stream: string, seq: number) => {
        const page = await stores.objects.list(snapshotPrefix(tenant, stream, seq));
        expect(page.items, `${tenant}/${stream} base at ${seq}`).toHaveLength(1);
        return page.items[0]?.key as string;
      };
      const body = async (key: string) => Buffer.from((await stores.objects.get(key))?.body ?? []);
      const replace = async (key: string, bytes: Uint8Array) => {
        await stores.objects.delete(key);
        await stores.objects.putIfAbsent(key, bytes);
      };

      beforeEach(async () => {
        stores = await factory.make();
        wrapper = new MemoryKeyWrapper();
        errors.length = 0;
        const l = ledger();
        for (const [tenant, stream] of STREAMS) {
          for (let i = 1; i <= 4; i++) await checkpoint(l, tenant, stream, i);
        }
        expect(errors).toEqual([]);
      });
      afterEach(() => stores.cleanup());

      it('seals the base, written by a checkpoint or the compactor, and reads from it', async () => {
        const l = ledger();
        // the compactor's base writer, at a seq no checkpoint based
        await l.states.writeBaseAt('acme', 'run-1', 4);
        for (const seq of [3, 4]) {
          const key = await snapKey('acme', 'run-1', seq);
          expect((await body(key)).subarray(0, CLEAR_MAGIC.length).equals(CLEAR_MAGIC)).toBe(false);
        }
        const w = compactionWorld(stores, {}, clock);
        const states = l.states;
        await settle({ ...w, compactor: (o = {}) => w.compactor({ states, ...o }) }, (ms) =>
          clock.advance(ms),
        );
        const fresh = ledger();
        for (const seq of [3, 4]) {
          const at = await fresh.states.hydrate('acme', 'run-1', seq);
          expect(at.working.state).toMatchObject({
            note1: `${MARKER} acme/run-1 1`,
            step: seq,
          });
        }
        expect(await fresh.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true });
        if (snapshotEncoding === 'chunks') return; // chunks are stored in the clear (not built)

        const needle = Buffer.from(MARKER, 'utf8');
        let seen = 0;
        for (const [tenant, stream] of STREAMS) {
          const page = await stores.records.query(streamPk(tenant, stream), { limit: 1000 });
          for (const item of page.items) {
            seen++;
            expect(Buffer.from(JSON.stringify(item), 'utf8').includes(needle), item.sk).toBe(false);
          }
        }
        let after: string | undefined;
        do {
          const page = await stores.objects.list('', after === undefined ? {} : { after });
          for (const o of page.items) {
            seen++;
            expect((await body(o.key)).includes(needle), o.key).toBe(false);
          }
          after = page.next;
        } while (after !== undefined);
        expect(seen).toBeGreaterThan(10);
      });

      it('fails closed on a sealed base moved to another seq, stream or tenant', async () => {
        await ledger().states.writeBaseAt('acme', 'run-1', 4);
        const ours = await snapKey('acme', 'run-1', 3);
        const original = await body(ours);
        for (const [tenant, stream, seq] of [
          ['acme', 'run-1', 4], // another seq
          ['acme', 'run-2', 3], // another stream
          ['other', 'run-1', 3], // another tenant
        ] as const) {
          await replace(ours, await body(await snapKey(tenant, stream, seq)));
          const l = ledger();
          await expect(l.states.hydrate('acme', 'run-1', 3)).rejects.toBeInstanceOf(
            TamperedLedgerError,
          );
          expect(await l.verifier.verify('acme', 'run-1')).toMatchObject({
            ok: false,
            code: 'ErrTamperedLedger',
            object: 'snapshot',
          });
        }
        await replace(ours, original);
        expect((await ledger().states.hydrate('acme', 'run-1', 3)).working.state).toMatchObject({
          step: 3,
        });
      });

      it('without the key store: hydration is refused, /verify passes', async () => {
        const blind = ledger(false);
        await expect(blind.states.hydrate('acme', 'run-1', 3)).rejects.toBeInstanceOf(
          ContentSealedError,
        );
        expect(await blind.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true });
      });
    });
  }
}
