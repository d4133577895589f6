import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryKeyWrapper } from '../../shared/adapters/memory/memory-key-wrapper.js';
import { streamPk } from '../../shared/chain/storage-keys.js';
import { StreamKeyring } from '../../shared/chain/stream-keyring.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { compactionWorld, type ManualClock, manualClock, settle } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Compaction of a stream encrypted at rest (docs/privacy.md, Decision 4), as built today: a
 * compactor pass merges a clear stream's small segments but leaves format 2 segments as
 * written (merging them needs the stream's keys and a sealed merged body, not built yet); it
 * writes no plaintext of the sealed stream anywhere, and the sealed stream reads and verifies
 * after the passes as before them.
 */

const T = 'acme';
const SEALED = 'sealed';
const CLEAR = 'clear';
const MARKER = 'marker-c0mpact-9e1d';
const utf8 = (s: string) => Buffer.from(s, 'utf8');

describe.each(allStores.filter((f) => f.enabled))(
  'compaction of a sealed stream on $name',
  (factory) => {
    let stores: StorePair;
    let clock: ManualClock;
    beforeEach(async () => {
      stores = await factory.make();
      clock = manualClock();
    });
    afterEach(() => stores.cleanup());

    const segmentsOf = async (stream: string) =>
      (await stores.records.query(streamPk(T, stream), { skPrefix: 'seg#', limit: 1000 })).items
        .length;

    it('merges nothing sealed, writes no plaintext, and the stream reads and verifies', async () => {
      const wrapper = new MemoryKeyWrapper();
      const keyed = () =>
        new Ledger(
          { ...stores, clock, keyring: new StreamKeyring(stores.records, wrapper) },
          { markEvery: 4, snapshotEvery: 3 },
        );
      const w = compactionWorld(stores, {}, clock);
      const l = keyed();
      for (let i = 0; i < 12; i++) {
        for (const [stream, by] of [
          [SEALED, l],
          [CLEAR, w.ledger],
        ] as const) {
          await by.appender.append({
            tenant: T,
            stream,
            events: [{ type: 'user.message', payload: { text: `${MARKER} ${stream}`, i } }],
          });
        }
      }
      const before = { sealed: await segmentsOf(SEALED), clear: await segmentsOf(CLEAR) };
      const shown = (await keyed().reader.readEvents(T, SEALED)).events;
      expect(shown).toHaveLength(12);

      // passes with and without the stream's keys (the compactor's states hold them, or not)
      for (const states of [keyed().states, w.ledger.states]) {
        await settle({ ...w, compactor: (o = {}) => w.compactor({ states, ...o }) }, (ms) =>
          clock.advance(ms),
        );
      }
      expect(await segmentsOf(CLEAR)).toBeLessThan(before.clear);
      expect(await segmentsOf(SEALED)).toBe(before.sealed);

      const after = keyed();
      expect((await after.reader.readEvents(T, SEALED)).events).toEqual(shown);
      expect(await after.verifier.verify(T, SEALED)).toMatchObject({ ok: true, seq: 12 });
      expect(await w.ledger.verifier.verify(T, SEALED)).toMatchObject({ ok: true, seq: 12 });

      // no object of the sealed stream holds its marker; the clear stream's do (the check bites)
      const needle = utf8(`${MARKER} ${SEALED}`);
      let clearSeen = false;
      let after_: string | undefined;
      do {
        const page = await stores.objects.list('', after_ === undefined ? {} : { after: after_ });
        for (const o of page.items) {
          const body = Buffer.from((await stores.objects.get(o.key))?.body ?? []);
          expect(body.includes(needle), o.key).toBe(false);
          if (o.key.includes(`/${CLEAR}/`) && body.includes(utf8(CLEAR))) clearSeen = true;
        }
        after_ = page.next;
      } while (after_ !== undefined);
      expect(clearSeen).toBe(true);
      for (const item of (await stores.records.query(streamPk(T, SEALED), { limit: 1000 })).items) {
        expect(JSON.stringify(item).includes(MARKER)).toBe(false);
      }
    });
  },
);
