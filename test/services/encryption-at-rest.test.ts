import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalKeyStore } from '../../shared/adapters/local/local-key-store.js';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { streamKeyKey, streamPk } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { canonicalJson } from '../../shared/domain/canonical.js';
import { ContentSealedError, TamperedLedgerError } from '../../shared/domain/errors.js';
import { hashLedgerEvent } from '../../shared/domain/event.js';
import { eventLeafHash, hexToHash, verifyInclusion } from '../../shared/domain/merkle/index.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { KeyWrapper } from '../../shared/ports/key-wrapper.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Encryption at rest of the ledger's events (docs/privacy.md; issue 28): a marker payload
 * appended through a Ledger that holds the stream keys is stored nowhere in the clear, nor is
 * any plain digest of it (the SHA-256 of its canonical JSON, its format 1 event hash); it reads
 * back with the keys; a server without the key store (or with another one) verifies the chain
 * and serves proofs, but cannot read the payload (ErrUnavailable). Streams written in the clear
 * read as before. On every adapter, with the memory wrapper and the embedded key store.
 */

const MARKER = 'marker-7f3a9c-approve-refund';
const payload = { text: MARKER, approved: true };
const ring = new KeyRing(new FakeSigner('at-rest'));
const utf8 = (s: string) => Buffer.from(s, 'utf8');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const wrappers: Array<{ name: string; make: () => KeyWrapper }> = [
  { name: 'memory wrapper', make: () => new MemoryKeyWrapper() },
  {
    name: 'local key store',
    make: () => {
      const dir = mkdtempSync(join(tmpdir(), 'hefesto-at-rest-'));
      dirs.push(dir);
      return new LocalKeyStore(join(dir, 'keys', 'kek.sqlite'));
    },
  },
];

/** Every object body and every record of the stream's and tenant's partitions, as stored. */
const everything = async (stores: StorePair): Promise<Buffer[]> => {
  const out: Buffer[] = [];
  let after: string | undefined;
  do {
    const page = await stores.objects.list('', after === undefined ? {} : { after });
    for (const o of page.items) {
      out.push(utf8(o.key));
      const got = await stores.objects.get(o.key);
      if (got) out.push(Buffer.from(got.body));
    }
    after = page.next;
  } while (after !== undefined);
  for (const pk of [streamPk('acme', 'run-1'), 't#acme#streams']) {
    const page = await stores.records.query(pk, { limit: 1000 });
    for (const item of page.items) out.push(utf8(JSON.stringify(item)));
  }
  return out;
};

for (const factory of allStores.filter((s) => s.enabled)) {
  for (const w of wrappers) {
    describe(`encryption at rest on ${factory.name} with the ${w.name}`, () => {
      let stores: StorePair;
      let wrapper: KeyWrapper;
      const ledger = (keyring?: StreamKeyring) =>
        new Ledger(
          { ...stores, clock: { now: () => 1_764_633_600_000 }, keyring },
          { signing: ring },
        );
      beforeEach(async () => {
        stores = await factory.make();
        wrapper = w.make();
      });
      afterEach(() => stores.cleanup());

      it('stores no byte of a payload nor any plain digest of it, and reads it back', async () => {
        const keyed = ledger(new StreamKeyring(stores.records, wrapper));
        await keyed.appender.append({
          tenant: 'acme',
          stream: 'run-1',
          events: [
            { type: 'user.message', payload },
            { type: 'user.message', payload: { n: 2 } },
          ],
        });
        await keyed.appender.append({
          tenant: 'acme',
          stream: 'run-1',
          events: [{ type: 'tool.result', payload }],
        });
        const page = await keyed.reader.readEvents('acme', 'run-1');
        expect(page.events.map((e) => e.payload)).toEqual([payload, { n: 2 }, payload]);
        expect(page.events[0]).toMatchObject({ format: 2 });

        const json = canonicalJson(payload);
        const first = page.events[0];
        if (!first) throw new Error('no event');
        const plainDigests = [
          createHash('sha256').update(json).digest(),
          // the hash this event would have in format 1: a confirmation oracle
          Buffer.from(hashLedgerEvent({ ...first, format: undefined }), 'hex'),
        ];
        const needles = [
          utf8(MARKER),
          utf8(json),
          ...plainDigests,
          ...plainDigests.map((d) => utf8(d.toString('hex'))),
        ];
        const stored = await everything(stores);
        expect(stored.length).toBeGreaterThan(3);
        for (const bytes of stored) {
          for (const needle of needles) expect(bytes.includes(needle)).toBe(false);
        }
      });

      it('without the key store: /verify and proofs pass, content is refused', async () => {
        const keyed = ledger(new StreamKeyring(stores.records, wrapper));
        for (let i = 0; i < 5; i++) {
          await keyed.appender.append({
            tenant: 'acme',
            stream: 'run-1',
            events: [{ type: 'user.message', payload: { ...payload, i } }],
          });
        }
        const shown = (await keyed.reader.readEvents('acme', 'run-1')).events;
        for (const blind of [ledger(), ledger(new StreamKeyring(stores.records, w.make()))]) {
          expect(await blind.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true, seq: 5 });
          await expect(blind.reader.readEvents('acme', 'run-1')).rejects.toBeInstanceOf(
            ContentSealedError,
          );
          const head = await blind.proofs.treeHead('acme', 'run-1');
          const proof = await blind.proofs.inclusion('acme', 'run-1', 3);
          const leaf = eventLeafHash(shown[2]?.hash ?? '');
          const path = proof.path.map((h) => hexToHash(h, 'path'));
          expect(
            verifyInclusion(leaf, 2, proof.treeSize, path, hexToHash(head.rootHash, 'root')),
          ).toBe(true);
        }
        // the events as served verify for a client: with the commitment key, payloads bound
        const keys = await new StreamKeyring(stores.records, wrapper).forRead('acme', 'run-1');
        const from = { seq: 0, hash: shown[0]?.prevHash ?? '' };
        expect(verifyEvents(shown, from, { commitKey: keys?.keys.commit })).toMatchObject({
          ok: true,
        });
        expect(verifyEvents(shown, from, { headersOnly: true })).toMatchObject({ ok: true });
      });

      it('never appends in the clear to an encrypted stream: no key store, or no key record', async () => {
        const keyed = ledger(new StreamKeyring(stores.records, wrapper));
        const append = (l: Ledger) =>
          l.appender.append({
            tenant: 'acme',
            stream: 'run-1',
            events: [{ type: 'user.message', payload }],
          });
        await append(keyed);
        const head = await keyed.reader.head('acme', 'run-1');
        // a server restarted without the key store
        await expect(append(ledger())).rejects.toBeInstanceOf(ContentSealedError);
        // the key record deleted (or replaced by another key), seen by a cold process
        await stores.records.delete(streamKeyKey('acme', 'run-1'));
        await expect(append(ledger(new StreamKeyring(stores.records, wrapper)))).rejects.toThrow(
          TamperedLedgerError,
        );
        // a key record of another key put in its place
        await new StreamKeyring(stores.records, wrapper, { newKeyId: () => 'k2' }).forWrite(
          'acme',
          'run-1',
        );
        await expect(append(ledger(new StreamKeyring(stores.records, wrapper)))).rejects.toThrow(
          TamperedLedgerError,
        );
        expect(await keyed.reader.head('acme', 'run-1')).toEqual(head);
        expect(await keyed.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true, seq: 1 });
      });

      it('keeps a stream written in the clear in the clear, readable by both', async () => {
        await ledger().appender.append({
          tenant: 'acme',
          stream: 'run-1',
          events: [{ type: 'user.message', payload }],
        });
        const keyed = ledger(new StreamKeyring(stores.records, wrapper));
        await keyed.appender.append({
          tenant: 'acme',
          stream: 'run-1',
          events: [{ type: 'user.message', payload: { n: 2 } }],
        });
        for (const l of [keyed, ledger()]) {
          const { events } = await l.reader.readEvents('acme', 'run-1');
          expect(events.map((e) => e.payload)).toEqual([payload, { n: 2 }]);
          expect(events.every((e) => e.format === undefined)).toBe(true);
          expect(await l.verifier.verify('acme', 'run-1')).toMatchObject({ ok: true });
        }
      });
    });
  }
}
