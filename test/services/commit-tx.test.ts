import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitRefusedError, CommitTransaction } from '../../shared/commit/commit-tx.js';
import { ConflictError } from '../../shared/domain/errors.js';
import { allStores, type StorePair } from '../support/stores.js';

// The commit transaction builder (shared/commit/commit-tx.ts): a refusal names the item that
// refused it, on every record store, and the append path answers from that name.
describe.each(allStores.filter((f) => f.enabled))('commit transaction on $name', (factory) => {
  let stores: StorePair;
  const pk = 'test#commit-tx';

  beforeEach(async () => {
    stores = await factory.make();
  });
  afterEach(async () => {
    await stores.cleanup();
  });

  const refusal = async (tx: CommitTransaction) => {
    const err = await tx.commit(stores.records).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CommitRefusedError);
    expect(err).toBeInstanceOf(ConflictError); // callers asking "did it lose?" still see it
    return err as CommitRefusedError;
  };

  it('writes every item when every condition holds', async () => {
    await new CommitTransaction()
      .add(
        { kind: 'head' },
        { kind: 'put', item: { pk, sk: 'head', seq: 1 }, conditions: [{ op: 'notExists' }] },
      )
      .add({ kind: 'index' }, { kind: 'put', item: { pk, sk: 'idx', n: 1 } })
      .commit(stores.records);
    expect((await stores.records.get({ pk, sk: 'head' }))?.seq).toBe(1);
    expect((await stores.records.get({ pk, sk: 'idx' }))?.n).toBe(1);
  });

  it.each([
    ['head', 0],
    ['label', 1],
    ['lease', 2],
  ] as const)(
    'names the %s item when it is the one that refuses, with what is stored',
    async (which, _index) => {
      await stores.records.put({ pk, sk: which, seq: 7 });
      const cond = (sk: string) => ({
        kind: 'put' as const,
        item: { pk, sk, seq: 8 },
        conditions: [
          sk === which
            ? { op: 'notExists' as const }
            : { op: 'attrNotExists' as const, attr: 'nope' },
        ],
      });
      const err = await refusal(
        new CommitTransaction()
          .add({ kind: 'head' }, cond('head'))
          .add({ kind: 'label', label: 'step-1' }, cond('label'))
          .add({ kind: 'lease' }, cond('lease')),
      );
      expect(err.refused.kind).toBe(which);
      if (err.refused.kind === 'label') expect(err.refused.label).toBe('step-1');
      expect(err.current?.seq).toBe(7);
      // Nothing of a refused transaction is written.
      for (const sk of ['head', 'label', 'lease']) {
        expect((await stores.records.get({ pk, sk }))?.seq ?? 'absent').toBe(
          sk === which ? 7 : 'absent',
        );
      }
    },
  );

  it('passes an error that is not a lost condition as it is', async () => {
    const err = await new CommitTransaction()
      .add({ kind: 'extra' }, { kind: 'put', item: { pk: '', sk: '' } })
      .commit(stores.records)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeDefined();
    expect(err).not.toBeInstanceOf(CommitRefusedError);
  });
  // The append path's own refusals (a taken label inside the commit, a fenced writer, a head
  // that moved) are the checkpoint-labels, fencing and append suites' cases.
});
