import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientIdempotencyKey } from '../../shared/chain/storage-keys.js';
import { Appender, type AppendRequest } from '../../shared/commit/append.js';
import type { EventInput } from '../../shared/domain/event.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The idempotency record keeps its receipt unsigned (idem-receipt.ts): a retry after a lost
 * reply signs the same tree head again and answers the very receipt of the first answer; a
 * record written before (the whole signed head in its body) is answered as it is.
 */

const batch = (label: string, n = 1): EventInput[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'observation', payload: { label, i } }));

describe.each(allStores.filter((f) => f.enabled))('idempotency receipts on $name', (factory) => {
  let stores: StorePair;
  let now = Date.now();
  const clock = { now: () => now };
  const ring = new KeyRing(new FakeSigner('idem-receipt'));
  let appender: Appender;
  const append = (req: Partial<AppendRequest> & Pick<AppendRequest, 'events'>) =>
    appender.append({ tenant: 'acme', stream: 'run-1', ...req });

  beforeEach(async () => {
    stores = await factory.make();
    appender = new Appender({ ...stores, clock, signer: ring.current });
  });
  afterEach(() => stores.cleanup());

  it('stores no signature, and a retry on each stream and tenant answers the first receipt', async () => {
    const firsts = [];
    for (const [tenant, stream] of [
      ['acme', 'run-1'],
      ['acme', 'run-2'],
      ['beta', 'run-1'],
    ] as const) {
      const idempotency = { key: `k-${stream}`, digest: 'a'.repeat(64) };
      now += 1000;
      await append({ tenant, stream, events: batch('x', 3) });
      const first = await append({ tenant, stream, events: batch('a', 2), idempotency });
      const incarnation = first.response.incarnation ?? expect.fail('no incarnation');
      const recordKey = clientIdempotencyKey(tenant, stream, incarnation, idempotency.key);
      const record = await stores.records.get(recordKey);
      expect(JSON.stringify(record)).not.toContain(first.response.treeHead?.signature);
      expect(record?.receipt).toEqual({
        treeBase: 0,
        treeSize: 5,
        rootHash: first.response.treeHead?.rootHash,
        timestamp: now,
      });
      firsts.push({ tenant, stream, idempotency, first });
    }
    now += 60_000;
    for (const { tenant, stream, idempotency, first } of firsts) {
      await append({ tenant, stream, events: batch('b', 1) });
      const retry = await append({ tenant, stream, events: batch('a', 2), idempotency });
      expect(retry.replayed).toBe(true);
      expect(retry.response).toEqual(first.response);
      expect(ring.verifier().verify(retry.response.treeHead).ok).toBe(true);
    }
  });

  it('answers a record written before with its stored signed head', async () => {
    const idempotency = { key: 'old-1', digest: 'b'.repeat(64) };
    const first = await append({ events: batch('a', 2), idempotency });
    const incarnation = first.response.incarnation ?? expect.fail('no incarnation');
    const key = clientIdempotencyKey('acme', 'run-1', incarnation, idempotency.key);
    const record = (await stores.records.get(key)) ?? expect.fail('no record');
    const { receipt: _, ...rest } = record;
    const old = { ...rest, body: { ...first.response, treeHead: { ...first.response.treeHead } } };
    await stores.records.put(old as never);
    const other = new Appender({ ...stores, clock, signer: new FakeSigner('another-key') });
    const retry = await other.append({
      tenant: 'acme',
      stream: 'run-1',
      events: batch('a', 2),
      idempotency,
    });
    expect(retry.response).toEqual(first.response);
  });
});
