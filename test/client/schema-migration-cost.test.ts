import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HefestoSession } from '../../packages/openai-agents/src/index.js';
import { chunkPrefix, streamObjectPrefix } from '../../shared/chain/storage-keys.js';
import { HefestoClient } from '../../shared/client/client.js';
import { resume } from '../../shared/client/harness.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';
import { allStores, type StorePair } from '../support/stores.js';

/**
 * The cost of a migration on a 1,000-turn run (issue 31's closing figures): requests of a
 * resume (and of a session's read) with and without one, the bytes of its checkpoint request, and the bytes it adds to
 * storage, next to a turn's. Counted at the fetch layer and in the object store, not timed.
 */

vi.setConfig({ testTimeout: 600_000 });

const ROOT = 'schema-cost-root-key-0123456789abcdef';
const TURNS = 1000;

const serve = (stores: StorePair) => {
  const clock = { now: () => Date.now() };
  const ledger = new Ledger({ ...stores, clock });
  const keys = new KeyService({ records: stores.records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const counts = { requests: 0, checkpointBytes: 0 };
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    counts.requests++;
    if (new URL(String(input)).pathname.endsWith('/checkpoints') && typeof init?.body === 'string')
      counts.checkpointBytes += Buffer.byteLength(init.body);
    return app.fetch(new Request(input, init));
  }) as typeof globalThis.fetch;
  const client = new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: ROOT, fetch });
  const reset = () => Object.assign(counts, { requests: 0, checkpointBytes: 0 });
  return { client, counts, reset };
};

/** Bytes of the objects under a prefix. */
const bytesUnder = async (stores: StorePair, prefix: string): Promise<number> => {
  let total = 0;
  let after: string | undefined;
  for (;;) {
    const page = await stores.objects.list(prefix, after === undefined ? {} : { after });
    for (const item of page.items) total += item.size;
    if (!page.next) return total;
    after = page.next;
  }
};

/** What the stream holds in objects: its segments and bases, and the tenant's chunks. */
const storedBytes = async (stores: StorePair, stream = 'long'): Promise<number> =>
  (await bytesUnder(stores, streamObjectPrefix('default', stream))) +
  (await bytesUnder(stores, chunkPrefix('default')));

describe.each(allStores.filter((s) => s.enabled && s.name !== 'aws'))(
  'the cost of a migration on $name',
  (f) => {
    let stores: StorePair;
    beforeAll(async () => {
      stores = await f.make();
    });
    afterAll(async () => {
      await stores.cleanup();
    });

    it(`is one checkpoint request after a ${TURNS}-turn run, its bytes those of the ops`, async () => {
      const world = serve(stores);
      const { client, counts } = world;
      const run = await resume(client, 'long');
      await run.checkpoint([{ op: 'set', path: '/log', value: [] }]);
      while (run.turn <= TURNS) {
        await run.checkpoint([{ op: 'set', path: '/log/-', value: { text: `turn ${run.turn}` } }]);
      }
      const before = await storedBytes(stores);
      world.reset();
      await resume(client, 'long');
      const plain = counts.requests;
      // Version 2 renames every entry's `text` to `body`: a change to all 1,000 entries.
      world.reset();
      const migrated = await resume(client, 'long', {
        schema: {
          version: 2,
          upcasters: {
            1: (s) => ({
              ...s,
              log: (s.log as Array<{ text: string }>).map(({ text }) => ({ body: text })),
            }),
          },
        },
      });
      const withMigration = { ...counts };
      const after = await storedBytes(stores);
      world.reset();
      await migrated.checkpoint([{ op: 'set', path: '/log/-', value: { body: 'one more' } }]);
      const turn = { ...counts };
      console.log(
        `[schema cost ${f.name}] ${TURNS} turns: resume ${plain} requests; with a migration ` +
          `${withMigration.requests} (+${withMigration.requests - plain}); migration request ` +
          `${withMigration.checkpointBytes} B, stored +${after - before} B; a turn's request ` +
          `${turn.checkpointBytes} B`,
      );
      expect(withMigration.requests).toBe(plain + 1);
      // One set of the list (canonical ~18 B an entry), not two ops per entry.
      expect(withMigration.checkpointBytes).toBeLessThan(TURNS * 40);
      expect(migrated.state.log).toHaveLength(TURNS);
    });

    it(`is one state read and one checkpoint request for a ${TURNS}-item session`, async () => {
      const world = serve(stores);
      const { client, counts } = world;
      const v1 = new HefestoSession({ sessionId: 'chat', client });
      for (let t = 1; t <= TURNS; t++) {
        await v1.addItems([{ type: 'message', role: 'user', content: `turn ${t}` }]);
      }
      const before = await storedBytes(stores, 'chat');
      world.reset();
      await v1.getItems(10);
      const plain = counts.requests;
      // Version 2 keeps every user message's content as input_text parts: all 1,000 change.
      const v2 = new HefestoSession({
        sessionId: 'chat',
        client,
        schema: {
          version: 2,
          upcasters: {
            1: (item) => ({ ...item, content: [{ type: 'input_text', text: item.content }] }),
          },
        },
      });
      world.reset();
      const items = await v2.getItems(10);
      const withMigration = { ...counts };
      const after = await storedBytes(stores, 'chat');
      world.reset();
      await v2.getItems(10);
      const read = counts.requests;
      console.log(
        `[schema cost ${f.name}] session of ${TURNS} items: getItems ${plain} request; with a ` +
          `migration ${withMigration.requests} (+${withMigration.requests - plain}); migration ` +
          `request ${withMigration.checkpointBytes} B, stored +${after - before} B; the next ` +
          `getItems ${read} request`,
      );
      // The state read, the migration, the proven read of the migrated items.
      expect(withMigration.requests).toBe(plain + 3);
      expect(read).toBe(plain);
      expect(items.at(-1)).toEqual({
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: `turn ${TURNS}` }],
      });
    });
  },
);
