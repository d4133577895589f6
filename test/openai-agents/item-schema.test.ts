import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HefestoApiError,
  type LedgerEvent,
  SchemaTooNewError,
  UpcasterMissingError,
} from '../../packages/client/src/index.js';
import { HefestoSession, type ItemSchema } from '../../packages/openai-agents/src/index.js';
import { allStores } from '../support/stores.js';
import { type SessionWorld, startWorld } from './world.js';

/**
 * Issue 31: a session across two item versions (packages/openai-agents/src/item-schema.ts,
 * docs/schema-evolution.md "Sessions"). Version 1 of an agent stores user messages with a
 * string `content`; version 2 as a list of input_text parts, with an upcaster from 1. A
 * history written at 1 reads back at 2 and is migrated once (one `hefesto.migration`, two
 * sessions at once included); an older session is refused on read and on write; a missing
 * step is named; the chain verifies. Over the HTTP API on memory, local and the emulators.
 */

const MIGRATION = 'hefesto.migration';
const v1Item = (text: string): AgentInputItem => ({ type: 'message', role: 'user', content: text });
const v2Item = (text: string): AgentInputItem => ({
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text }],
});
const v2: ItemSchema = {
  version: 2,
  upcasters: {
    1: (item) =>
      typeof item.content === 'string'
        ? { ...item, content: [{ type: 'input_text', text: item.content }] }
        : item,
  },
};

let n = 0;
const fresh = () => `items-${Date.now().toString(36)}-${n++}`;

for (const factory of allStores) {
  describe.skipIf(!factory.enabled)(`HefestoSession item schema on ${factory.name}`, () => {
    let world: SessionWorld;
    beforeAll(async () => {
      world = await startWorld(factory);
    });
    afterAll(() => world.close());

    const session = (sessionId: string, schema?: ItemSchema, sent?: string[]) =>
      new HefestoSession({
        sessionId,
        client: world.client({ sent }),
        ...(schema ? { schema } : {}),
      });
    const migrations = async (id: string) =>
      (await world.client().readEvents(id, { type: MIGRATION })).events;
    const headSeq = async (id: string) => (await world.client().getStream(id)).seq;

    /** A history of `turns` user messages written by version 1. */
    const writtenAtV1 = async (turns: number) => {
      const id = fresh();
      const old = session(id);
      for (let t = 0; t < turns; t++) await old.addItems([v1Item(`m${t}`)]);
      return id;
    };

    it('a session across two item versions: read upcast, migrated once, written on at 2', async () => {
      const id = await writtenAtV1(4);
      const sent: string[] = [];
      const next = session(id, v2, sent);

      expect(await next.getItems(2)).toEqual([v2Item('m2'), v2Item('m3')]);
      await next.addItems([v2Item('m4')]);
      const again = session(id, v2);

      expect(await again.getItems()).toEqual([0, 1, 2, 3, 4].map((t) => v2Item(`m${t}`)));
      const [migration, ...more] = await migrations(id);
      expect(more).toEqual([]);
      expect(migration?.payload).toMatchObject({ from: 1, to: 2 });
      const ops = ((migration as LedgerEvent).payload as { ops: { path: string }[] }).ops.map(
        (o) => o.path,
      );
      expect(ops).toEqual(['/items/0', '/items/1', '/items/2', '/items/3', '/schema']);
      // The read, the state for the migration, the migration, the proven read of its items
      // (the state read has no proof); the change (no read before it).
      expect(sent).toEqual([
        `GET /v1/streams/${id}/history`,
        `GET /v1/streams/${id}/state`,
        `POST /v1/streams/${id}/checkpoints`,
        `GET /v1/streams/${id}/history`,
        `POST /v1/streams/${id}/history`,
      ]);
      expect((await world.client().verify(id)).ok).toBe(true);
      // A delta written at 2 records its version (the chain's rule for the state's version).
      const { events } = await world.client().readEvents(id, { from: migration?.seq ?? 0 });
      expect(events.at(-1)?.payload).toMatchObject({ schema: 2 });
    });

    it('two sessions reading an old history at once commit one migration', async () => {
      const id = await writtenAtV1(3);
      const [a, b] = await Promise.all([session(id, v2).getItems(), session(id, v2).getItems()]);

      expect(a).toEqual([v2Item('m0'), v2Item('m1'), v2Item('m2')]);
      expect(b).toEqual(a);
      expect(await migrations(id)).toHaveLength(1);
      expect((await world.client().verify(id)).ok).toBe(true);
    });

    it('two sessions writing to an old history at once commit one migration, and both items land', async () => {
      const id = await writtenAtV1(2);
      await Promise.all([
        session(id, v2).addItems([v2Item('a')]),
        session(id, v2).addItems([v2Item('b')]),
      ]);
      const items = await session(id, v2).getItems();

      expect(items.slice(0, 2)).toEqual([v2Item('m0'), v2Item('m1')]);
      expect(items.slice(2)).toEqual(expect.arrayContaining([v2Item('a'), v2Item('b')]));
      expect(await migrations(id)).toHaveLength(1);
    });

    it('refuses an older session once the history moved on, on read and on write, and writes nothing', async () => {
      const id = await writtenAtV1(2);
      const stale = session(id);
      await stale.getItems(); // read at version 1, before the migration
      await session(id, v2).getItems();
      const seq = await headSeq(id);

      await expect(session(id).getItems()).rejects.toThrow(SchemaTooNewError);
      await expect(session(id).getItems()).rejects.toThrow(
        "the stream's state is at schema version 2; this worker's is 1",
      );
      const refused = await stale.addItems([v1Item('old shape')]).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(HefestoApiError);
      expect(refused).toMatchObject({ code: 'ErrSchemaTooNew', status: 409 });
      expect(String((refused as Error).message)).toContain('schema version 2');
      await expect(stale.popItem()).rejects.toMatchObject({ code: 'ErrSchemaTooNew' });
      await expect(stale.clearSession()).rejects.toMatchObject({ code: 'ErrSchemaTooNew' });
      expect(await headSeq(id)).toBe(seq);
    });

    it('a history a version-2 session starts is at version 2: no migration, an older session refused', async () => {
      const id = fresh();
      await session(id, v2).addItems([v2Item('first')]);

      expect(await session(id, v2).getItems()).toEqual([v2Item('first')]);
      expect(await migrations(id)).toEqual([]);
      await expect(session(id).getItems()).rejects.toThrow(SchemaTooNewError);
      await expect(session(id).addItems([v1Item('x')])).rejects.toMatchObject({
        code: 'ErrSchemaTooNew',
      });
    });

    it('migrates before its first write when it had not read the history', async () => {
      const id = await writtenAtV1(2);
      await session(id, v2).addItems([v2Item('new')]);

      expect(await session(id, v2).getItems()).toEqual([v2Item('m0'), v2Item('m1'), v2Item('new')]);
      expect(await migrations(id)).toHaveLength(1);
    });

    it('migrates and sends again when an older session started the history after it looked', async () => {
      const id = fresh();
      const next = session(id, v2);
      expect(await next.getItems()).toEqual([]); // nothing there yet: nothing to migrate
      await session(id).addItems([v1Item('old')]);

      await next.addItems([v2Item('new')]);

      expect(await session(id, v2).getItems()).toEqual([v2Item('old'), v2Item('new')]);
      expect(await migrations(id)).toHaveLength(1);
    });

    it('a newer writer on a history not migrated is refused with its own code, naming both versions: 409 ErrSchemaTooOld', async () => {
      const id = await writtenAtV1(1);
      const change = { type: 'append_items' as const, items: [v2Item('new') as never] };
      const refused = await world
        .client()
        .changeHistory(id, change, { schema: 2 })
        .catch((e: unknown) => e);

      expect(refused).toMatchObject({
        code: 'ErrSchemaTooOld',
        status: 409,
        problem: { streamVersion: 1, workerVersion: 2 },
      });
      expect(await migrations(id)).toEqual([]);
    });

    it('keeps the version across a clear and a compaction', async () => {
      const id = await writtenAtV1(2);
      const next = session(id, v2);
      await next.clearSession();
      await next.addItems([v2Item('after clear')]);
      await next.replaceHistoryWithCompaction([v2Item('compacted')]);

      await expect(session(id).getItems()).rejects.toThrow(SchemaTooNewError);
      expect(await session(id, v2).getItems()).toEqual([v2Item('compacted')]);
      // The clear cut the chain at itself (docs/openai-agents.md, "Clearing"): the migration
      // before it is no longer served, and none was written after it.
      expect(await migrations(id)).toHaveLength(0);
    });

    it('says which upcaster it lacks, and writes nothing', async () => {
      const id = await writtenAtV1(1);
      const seq = await headSeq(id);
      const v3: ItemSchema = { version: 3, upcasters: { 2: (item) => item } };

      const err = await session(id, v3)
        .getItems()
        .catch((e: unknown) => e);

      expect(err).toBeInstanceOf(UpcasterMissingError);
      expect(err).toMatchObject({ missing: 1, workerVersion: 3 });
      await expect(session(id, v3).addItems([v2Item('x')])).rejects.toThrow(UpcasterMissingError);
      expect(await headSeq(id)).toBe(seq);
    });

    it('refuses a schema option it cannot use', () => {
      const client = world.client();
      expect(() => new HefestoSession({ client, schema: { version: 0 } })).toThrow(
        'schema.version',
      );
      expect(
        () => new HefestoSession({ client, schema: { version: 2, upcasters: { 2: (i) => i } } }),
      ).toThrow('schema.upcasters[2]');
    });
  });
}
