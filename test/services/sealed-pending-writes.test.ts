import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { pendingWriteSk, streamPk } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { ContentSealedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Item, JsonValue } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Pending writes of a stream sealed at rest (docs/privacy.md, Decision 4): the value of a
 * write is stored sealed in its record (`valueSealed`, AES-256-GCM under the stream's content
 * key, AAD bound to tenant, stream, kind and the record's sk), whether it came by the direct
 * path or, to a frozen checkpoint, through a `hefesto.writes` event's commit. A marker value
 * is in no stored byte; the writes read back; a sealed value moved to another write, stream
 * or tenant fails closed (ErrTamperedLedger); a server without the key store refuses to read
 * or write them (ErrUnavailable) while /verify passes. On every store.
 */

const MARKER = 'marker-pw-5d1e-secret-answer';
const ring = new KeyRing(new FakeSigner('sealed-writes'));
const now = { now: () => 1_764_633_600_000 };
const task = { taskId: 'task-1', taskPath: '~__pregel_pull, agent' };

for (const factory of allStores.filter((s) => s.enabled)) {
  describe(`sealed pending writes on ${factory.name}`, () => {
    let stores: StorePair;
    let wrapper: MemoryKeyWrapper;
    const ledger = (keyed = true) =>
      new Ledger(
        {
          ...stores,
          clock: now,
          keyring: keyed ? new StreamKeyring(stores.records, wrapper) : undefined,
        },
        { signing: ring },
      );
    const checkpoint = async (l: Ledger, tenant: string, stream: string, label: string) => {
      const head = await l.appender.readHead(tenant, stream);
      await l.checkpoints.checkpoint({
        tenant,
        stream,
        ops: [{ op: 'set', path: `/step`, value: label }],
        baseDigest: head.stateDigest,
        label,
      });
    };
    const put = (l: Ledger, tenant: string, stream: string, label: string, value: JsonValue) =>
      l.pendingWrites.put(tenant, stream, label, {
        ...task,
        writes: [
          { idx: 0, channel: 'messages', value },
          { idx: 1, channel: 'messages', value: { other: `${tenant}/${stream}` } },
        ],
      });
    const record = async (tenant: string, stream: string, label: string, idx: number) =>
      (await stores.records.get({
        pk: streamPk(tenant, stream),
        sk: pendingWriteSk(label, task.taskPath, task.taskId, idx),
      })) as Item;

    beforeEach(async () => {
      stores = await factory.make();
      wrapper = new MemoryKeyWrapper();
      const l = ledger();
      for (const [tenant, stream] of [
        ['acme', 'run-1'],
        ['acme', 'run-2'],
        ['other', 'run-1'],
      ] as const) {
        await checkpoint(l, tenant, stream, 'c1');
        await put(l, tenant, stream, 'c1', { text: MARKER, to: `${tenant}/${stream}` });
      }
    });
    afterEach(() => stores.cleanup());

    it('stores no byte of a value, by the direct path or a frozen checkpoint’s event, and reads it back', async () => {
      const l = ledger();
      await checkpoint(l, 'acme', 'run-1', 'c2'); // freezes c1
      // a write to the frozen c1 goes through a hefesto.writes event, its commit writes it
      await l.pendingWrites.put('acme', 'run-1', 'c1', {
        ...task,
        writes: [{ idx: 2, channel: 'messages', value: { late: MARKER } }],
      });
      await put(l, 'acme', 'run-1', 'c2', { text: MARKER, at: 'c2' });
      const c1 = await l.pendingWrites.list('acme', 'run-1', 'c1');
      expect(c1.map((w) => w.value)).toEqual([
        { text: MARKER, to: 'acme/run-1' },
        { other: 'acme/run-1' },
        { late: MARKER },
      ]);
      expect((await l.pendingWrites.list('acme', 'run-1', 'c2'))[0]?.value).toEqual({
        text: MARKER,
        at: 'c2',
      });
      expect((await record('acme', 'run-1', 'c1', 2)).valueSealed).toEqual(expect.any(String));
      expect(await l.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true });

      const needle = Buffer.from(MARKER, 'utf8');
      let seen = 0;
      for (const pk of [streamPk('acme', 'run-1'), streamPk('acme', 'run-2')]) {
        const page = await stores.records.query(pk, { limit: 1000 });
        for (const item of page.items) {
          seen++;
          expect(Buffer.from(JSON.stringify(item), 'utf8').includes(needle), item.sk).toBe(false);
        }
      }
      let after: string | undefined;
      do {
        const page = await stores.objects.list('', after === undefined ? {} : { after });
        for (const o of page.items) {
          const got = await stores.objects.get(o.key);
          seen++;
          expect(Buffer.from(got?.body ?? []).includes(needle), o.key).toBe(false);
        }
        after = page.next;
      } while (after !== undefined);
      expect(seen).toBeGreaterThan(10);
    });

    it('fails closed on a sealed value moved to another write, stream or tenant, or a clear one planted', async () => {
      const l = ledger();
      const ours = await record('acme', 'run-1', 'c1', 0);
      for (const from of [
        await record('acme', 'run-1', 'c1', 1), // another place
        await record('acme', 'run-2', 'c1', 0), // another stream
        await record('other', 'run-1', 'c1', 0), // another tenant
      ]) {
        await stores.records.put({ ...ours, valueSealed: from.valueSealed });
        await expect(l.pendingWrites.list('acme', 'run-1', 'c1')).rejects.toBeInstanceOf(
          TamperedLedgerError,
        );
      }
      // a value planted in the clear in its place
      const { valueSealed: _, ...bare } = ours;
      await stores.records.put({ ...bare, valueJson: JSON.stringify({ planted: true }) });
      await expect(l.pendingWrites.list('acme', 'run-1', 'c1')).rejects.toBeInstanceOf(
        TamperedLedgerError,
      );
      await stores.records.put(ours);
      expect((await l.pendingWrites.list('acme', 'run-1', 'c1'))[0]?.value).toEqual({
        text: MARKER,
        to: 'acme/run-1',
      });
    });

    it('without the key store: writes are neither read nor written, /verify passes', async () => {
      const blind = ledger(false);
      await expect(blind.pendingWrites.list('acme', 'run-1', 'c1')).rejects.toBeInstanceOf(
        ContentSealedError,
      );
      const before = await record('acme', 'run-1', 'c1', 0);
      await expect(put(blind, 'acme', 'run-1', 'c1', { text: 'exposed' })).rejects.toBeInstanceOf(
        ContentSealedError,
      );
      expect(await record('acme', 'run-1', 'c1', 0)).toEqual(before);
      expect(await blind.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true });
    });
  });
}
