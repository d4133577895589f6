import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ckptSk, labelKey, streamPk } from '../../shared/chain/storage-keys.js';
import { LabelExistsError } from '../../shared/domain/errors.js';
import type { DeltaOp } from '../../shared/domain/state.js';
import { compactionWorld, manualClock, type World } from '../support/compaction.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * Label records hold only the seq; the checkpoint's fields are stored once, in its list entry
 * (labels.ts). `GET .../checkpoints/{label}` answers the same as before, a duplicate label is
 * still refused, and label records written before (everything in them) still answer.
 */

const set = (path: string, value: unknown): DeltaOp => ({ op: 'set', path, value }) as DeltaOp;

describe.each(allStores.filter((f) => f.enabled))('label records on $name', (factory) => {
  let stores: StorePair;
  let world: World;
  const cp = async (tenant: string, stream: string, label: string, parentLabel?: string) => {
    const head = await world.ledger.appender.readHead(tenant, stream);
    return world.ledger.checkpoints.checkpoint({
      tenant,
      stream,
      ops: [set('/n', label)],
      baseDigest: head.stateDigest,
      label,
      meta: { step: label.length, parents: { '': parentLabel ?? null } } as never,
      ...(parentLabel ? { parentLabel } : {}),
    });
  };

  beforeEach(async () => {
    stores = await factory.make();
    world = compactionWorld(stores, {}, manualClock());
  });
  afterEach(() => stores.cleanup());

  it('keeps only the seq in the label record and answers the label from its entry', async () => {
    for (const [tenant, stream] of [
      ['acme', 's1'],
      ['acme', 's2'],
      ['beta', 's1'],
    ] as const) {
      await cp(tenant, stream, 'c1');
      const second = await cp(tenant, stream, 'c2', 'c1');
      const record = await stores.records.get(labelKey(tenant, stream, 'c2'));
      expect(record).toEqual({ ...labelKey(tenant, stream, 'c2'), seq: second.seq });
      const got = await world.ledger.labels.get(tenant, stream, 'c2');
      expect(got).toEqual({
        label: 'c2',
        seq: second.seq,
        stateDigest: second.stateDigest,
        meta: { step: 2, parents: { '': 'c1' } },
        parentLabel: 'c1',
        createdAt: expect.any(Number),
      });
      await expect(cp(tenant, stream, 'c2', 'c1')).rejects.toBeInstanceOf(LabelExistsError);
      const page = await world.ledger.labels.list(tenant, stream);
      expect(page.checkpoints.map((c) => c.label)).toEqual(['c2', 'c1']);
    }
  });

  it('answers a label record written before from the record alone, checked against its delta', async () => {
    const first = await cp('acme', 's1', 'c1');
    const pk = streamPk('acme', 's1');
    const legacy = {
      ...labelKey('acme', 's1', 'c1'),
      label: 'c1',
      seq: first.seq,
      stateDigest: first.stateDigest,
      metaJson: '{"parents":{"":null},"step":2}',
      createdAt: 1234,
    };
    await stores.records.put(legacy);
    await stores.records.delete({ pk, sk: ckptSk(first.seq) });
    expect(await world.ledger.labels.get('acme', 's1', 'c1')).toEqual({
      label: 'c1',
      seq: first.seq,
      stateDigest: first.stateDigest,
      meta: { step: 2, parents: { '': null } },
      createdAt: 1234,
    });
    // Its meta is what the delta committed: another one is tampering, not an answer.
    await stores.records.put({ ...legacy, metaJson: '{"step":9}' });
    await expect(world.ledger.labels.get('acme', 's1', 'c1')).rejects.toMatchObject({
      code: 'ErrTamperedLedger',
      object: 'checkpoint',
    });
  });
});
