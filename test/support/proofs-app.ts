import { pino } from 'pino';
import { segmentKey, streamPk } from '../../shared/chain/storage-keys.js';
import { HefestoClient, type HefestoClientOptions } from '../../shared/client/client.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import type { Item } from '../../shared/ports/record-store.js';
import { FakeSigner, KeyRing } from '../../shared/ports/signer.js';
import type { StorePair } from './stores.js';

/**
 * The HTTP API in process over a StorePair (memory, local or the emulators), signing with a
 * fake key, and a client that talks to it without a socket. Plus what an attacker with write
 * access to the table and the bucket does: back up a stream's records, restore them later.
 */

export const PROOFS_ROOT = 'proofs-root-key-0123456789abcdef';

export const proofsApp = (stores: StorePair, ring = new KeyRing(new FakeSigner('proofs'))) => {
  const clock = { now: () => Date.now() };
  const ledger = new Ledger({ ...stores, clock }, { signing: ring, markEvery: 4 });
  const keys = new KeyService({ records: stores.records, clock, rootKey: PROOFS_ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch;
  const client = (options: Partial<HefestoClientOptions> = {}) =>
    new HefestoClient({
      baseUrl: 'http://hefesto.test',
      apiKey: PROOFS_ROOT,
      fetch,
      sleep: async () => {},
      ...options,
    });
  return { app, ledger, keys, ring, clock, fetch, client };
};

/** Every record of a stream's partition, as a table backup holds it. */
export const backupStream = async (stores: StorePair, tenant: string, stream: string) => {
  const items: Item[] = [];
  let after: string | undefined;
  do {
    const page = await stores.records.query(streamPk(tenant, stream), { after, limit: 100 });
    items.push(...page.items);
    after = page.next;
  } while (after !== undefined);
  return items;
};

/**
 * Restores a backup of a stream's partition over the table (every record now there removed
 * first), and deletes the segments appended after it (`fromSeq` on): a truncation that no
 * hash chain can see.
 */
export const restoreStream = async (
  stores: StorePair,
  tenant: string,
  stream: string,
  backup: Item[],
  segmentsFrom: number[],
) => {
  for (const item of await backupStream(stores, tenant, stream)) {
    await stores.records.delete({ pk: item.pk, sk: item.sk });
  }
  for (const item of backup) await stores.records.put(item);
  for (const seq of segmentsFrom) await stores.objects.delete(segmentKey(tenant, stream, seq));
};
