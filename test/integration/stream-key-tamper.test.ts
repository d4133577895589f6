import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { headKey, streamKeyKey } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { ContentSealedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Item, JsonValue } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 28 (A6): the stream key record and the head's keyId, tampered with behind the
 * services' back on every store. The wrapped secret is bound to tenant, stream and keyId by
 * the wrap's AAD (docs/privacy.md, Decision 3), so an edited, moved or renamed record does not
 * unwrap; a deleted one leaves the stream sealed. Either way reads fail closed (never another
 * payload, never the headers served as content), appends are refused (never in the clear,
 * never under a new key) and the chain still verifies over the headers.
 */

const ring = new KeyRing(new FakeSigner('key-tamper'));
const T = 'acme';
const S = 'run-1';
const now = { now: () => 1_764_633_600_000 };
const sealedOrTampered = (err: unknown) =>
  err instanceof ContentSealedError || err instanceof TamperedLedgerError;

for (const factory of allStores.filter((s) => s.enabled)) {
  describe(`the stream key record, tampered on ${factory.name}`, () => {
    let stores: StorePair;
    let wrapper: MemoryKeyWrapper;
    /** A cold process: a new keyring, nothing cached. */
    const cold = () =>
      new Ledger(
        { ...stores, clock: now, keyring: new StreamKeyring(stores.records, wrapper) },
        { signing: ring },
      );
    const write = (tenant: string, stream: string, payload: JsonValue) =>
      cold().appender.append({ tenant, stream, events: [{ type: 'user.message', payload }] });
    const record = async (tenant: string, stream: string) =>
      (await stores.records.get(streamKeyKey(tenant, stream))) as Item;
    /** Every read of S fails closed, appends are refused, /verify passes, nothing written. */
    const failsClosed = async () => {
      const head = await stores.records.get(headKey(T, S));
      const l = cold();
      const read = await l.reader.readEvents(T, S).then(
        (page) => page,
        (err: unknown) => err,
      );
      expect(sealedOrTampered(read), `read served ${JSON.stringify(read)}`).toBe(true);
      const append = await write(T, S, { n: 'after' }).then(
        (r) => r,
        (err: unknown) => err,
      );
      expect(sealedOrTampered(append), `append answered ${JSON.stringify(append)}`).toBe(true);
      expect(await stores.records.get(headKey(T, S))).toEqual(head);
      expect(await cold().verifier.verify(T, S)).toMatchObject({ ok: true, seq: 2 });
    };

    beforeEach(async () => {
      stores = await factory.make();
      wrapper = new MemoryKeyWrapper();
      for (const [tenant, stream] of [
        [T, S],
        [T, 'run-2'],
        ['other', S],
      ] as const) {
        await write(tenant, stream, { who: `${tenant}/${stream}`, n: 1 });
        await write(tenant, stream, { who: `${tenant}/${stream}`, n: 2 });
      }
      const { events } = await cold().reader.readEvents(T, S);
      expect(events.map((e) => e.payload)).toEqual([
        { who: 'acme/run-1', n: 1 },
        { who: 'acme/run-1', n: 2 },
      ]);
    });
    afterEach(() => stores.cleanup());

    it('detects an edited wrapped key', async () => {
      const item = await record(T, S);
      const wrapped = Buffer.from(String(item.wrapped), 'base64');
      wrapped[wrapped.length - 1] = (wrapped[wrapped.length - 1] ?? 0) ^ 1;
      await stores.records.put({ ...item, wrapped: wrapped.toString('base64') });
      await failsClosed();
    });

    it("detects a record swapped for another stream's", async () => {
      const theirs = await record(T, 'run-2');
      await stores.records.put({ ...theirs, ...streamKeyKey(T, S) });
      await failsClosed();
    });

    it("detects a record swapped for another tenant's", async () => {
      const theirs = await record('other', S);
      await stores.records.put({ ...theirs, ...streamKeyKey(T, S) });
      await failsClosed();
    });

    it('detects a deleted record', async () => {
      await stores.records.delete(streamKeyKey(T, S));
      await failsClosed();
    });

    it("detects a record whose keyId is changed (to another stream's or the head's other)", async () => {
      const item = await record(T, S);
      const theirs = await record(T, 'run-2');
      for (const keyId of [String(theirs.keyId), 'k-forged']) {
        await stores.records.put({ ...item, keyId });
        await failsClosed();
      }
    });

    it("detects the head's keyId stripped or changed: never an append in the clear", async () => {
      const head = (await stores.records.get(headKey(T, S))) as Item;
      expect(head.keyId).toBe((await record(T, S)).keyId);
      const { keyId: _, ...stripped } = head;
      for (const forged of [stripped, { ...head, keyId: 'k-forged' }]) {
        await stores.records.put(forged);
        const append = await write(T, S, { n: 'after' }).then(
          (r) => r,
          (err: unknown) => err,
        );
        expect(sealedOrTampered(append), `append answered ${JSON.stringify(append)}`).toBe(true);
        expect(await stores.records.get(headKey(T, S))).toEqual(forged);
        // the content read is bound to the segments' keyId, not the head's
        const { events } = await cold().reader.readEvents(T, S);
        expect(events.map((e) => e.payload)).toEqual([
          { who: 'acme/run-1', n: 1 },
          { who: 'acme/run-1', n: 2 },
        ]);
      }
    });

    it("detects the head's keyId stripped with the record deleted, or on a server without a keyring", async () => {
      const head = (await stores.records.get(headKey(T, S))) as Item;
      const { keyId: _, ...stripped } = head;
      await stores.records.put(stripped);
      const keyless = new Ledger({ ...stores, clock: now }, { signing: ring });
      for (const ledger of [keyless, cold()]) {
        // the first without a keyring (the record stays), the second with the record gone
        if (ledger !== keyless) await stores.records.delete(streamKeyKey(T, S));
        const append = await ledger.appender
          .append({ tenant: T, stream: S, events: [{ type: 'user.message', payload: 'exposed' }] })
          .then(
            (r) => r,
            (err: unknown) => err,
          );
        expect(sealedOrTampered(append), `append answered ${JSON.stringify(append)}`).toBe(true);
        expect(await stores.records.get(headKey(T, S))).toEqual(stripped);
      }
      expect(await cold().verifier.verify(T, S)).toMatchObject({ ok: true, seq: 2 });
    });
  });
}
