import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ckptSk, labelKey, streamPk } from '../../shared/chain/storage-keys.js';
import type { Item } from '../../shared/ports/record-store.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Issue 20 item 2: checkpoint list entries (`ckpt#`, LangGraph's metadata) and label records
 * are bound through the delta that commits them. An edited entry fails GET by label and the
 * list closed (ErrTamperedLedger, object `checkpoint`, never the edited value); a deleted
 * entry is noticed by the list page that covers its seq; /verify reports both, and a deleted
 * label record.
 */

const T = 'acme';
const S = 'thread';

describe.each(allStores.filter((f) => f.enabled))(
  'checkpoint records bound on $name',
  (factory) => {
    let stores: StorePair;
    let world: World;
    beforeEach(async () => {
      stores = await factory.make();
      world = compactionWorld(stores, {}, manualClock());
    });
    afterEach(() => stores.cleanup());

    const cp = async (label: string, parentLabel?: string) => {
      const head = await world.ledger.appender.readHead(T, S);
      return world.ledger.checkpoints.checkpoint({
        tenant: T,
        stream: S,
        ops: [{ op: 'set', path: '/n', value: label }],
        baseDigest: head.stateDigest,
        label,
        meta: { source: 'loop', step: label.length },
        ...(parentLabel ? { parentLabel } : {}),
      });
    };
    const history = async () => {
      const seqs = [(await cp('c1')).seq];
      for (let i = 2; i <= 5; i++) seqs.push((await cp(`c${i}`, `c${i - 1}`)).seq);
      await world.ledger.appender.append({
        tenant: T,
        stream: S,
        events: [{ type: 'note', payload: {} }],
      });
      return seqs;
    };
    const fresh = () => compactionWorld(stores, {}, manualClock()).ledger;
    const tampered = { code: 'ErrTamperedLedger', object: 'checkpoint' };

    it('serves honest entries and lists, and /verify passes', async () => {
      await history();
      const ledger = fresh();
      expect(await ledger.labels.get(T, S, 'c3')).toMatchObject({ meta: { step: 2 } });
      const first = await ledger.labels.list(T, S, { limit: 2 });
      expect(first.checkpoints.map((c) => c.label)).toEqual(['c5', 'c4']);
      const rest = await ledger.labels.list(T, S, { before: first.next as number });
      expect(rest.checkpoints.map((c) => c.label)).toEqual(['c3', 'c2', 'c1']);
      expect(await ledger.verifier.verify(T, S)).toMatchObject({ ok: true });
    });

    it('fails GET by label, the list and /verify closed when an entry’s metadata is edited', async () => {
      const seqs = await history();
      const key = { pk: streamPk(T, S), sk: ckptSk(seqs[2] as number) };
      const entry = (await stores.records.get(key)) as Item;
      await stores.records.put({ ...entry, metaJson: '{"source":"input","step":2}' });
      const ledger = fresh();
      await expect(ledger.labels.get(T, S, 'c3')).rejects.toMatchObject(tampered);
      await expect(ledger.labels.list(T, S)).rejects.toMatchObject(tampered);
      await expect(ledger.labels.list(T, S, { meta: { source: 'input' } })).rejects.toMatchObject(
        tampered,
      );
      expect(await ledger.verifier.verify(T, S)).toMatchObject({
        ok: false,
        object: 'checkpoint',
        seq: seqs[2],
      });
    });

    it('notices a deleted entry in the list page that covers it, and in /verify', async () => {
      const seqs = await history();
      await stores.records.delete({ pk: streamPk(T, S), sk: ckptSk(seqs[1] as number) });
      const ledger = fresh();
      // The first page (c5, c4) does not cover seq of c2; the page that does fails closed.
      const first = await ledger.labels.list(T, S, { limit: 2 });
      expect(first.checkpoints.map((c) => c.label)).toEqual(['c5', 'c4']);
      await expect(
        ledger.labels.list(T, S, { before: first.next as number }),
      ).rejects.toMatchObject(tampered);
      await expect(ledger.labels.get(T, S, 'c2')).rejects.toMatchObject(tampered);
      expect(await ledger.verifier.verify(T, S)).toMatchObject({
        ok: false,
        object: 'checkpoint',
        seq: seqs[1],
      });
    });

    it('notices the newest entry deleted, and a deleted or repointed label record in /verify', async () => {
      const seqs = await history();
      const newest = { pk: streamPk(T, S), sk: ckptSk(seqs[4] as number) };
      const saved = (await stores.records.get(newest)) as Item;
      await stores.records.delete(newest);
      await expect(fresh().labels.list(T, S, { limit: 1 })).rejects.toMatchObject(tampered);
      await stores.records.put(saved);

      await stores.records.put({ ...labelKey(T, S, 'c4'), seq: seqs[2] as number });
      await expect(fresh().labels.get(T, S, 'c4')).rejects.toMatchObject(tampered);
      await stores.records.delete(labelKey(T, S, 'c4'));
      expect(await fresh().verifier.verify(T, S)).toMatchObject({
        ok: false,
        object: 'checkpoint',
        seq: seqs[3],
      });
    });
  },
);
