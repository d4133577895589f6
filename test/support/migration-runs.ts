import { pino } from 'pino';
import { HefestoClient, resume } from '../../packages/client/src/index.js';
import { HefestoSession } from '../../packages/openai-agents/src/index.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';

/**
 * The two runs test/vectors/schema-migration.json records, written through the client SDK on
 * a memory server with a fixed clock (every event's `ts` is 1767225600000), so their events,
 * hashes included, are the same every time: a harness run renaming `notes` to `entries`, and
 * a session whose user messages change from a string `content` to input_text parts; each
 * migrated by its version 2, which then writes one more turn.
 */

export const VECTOR_TS = 1_767_225_600_000;
const ROOT = 'schema-migration-vectors-root-key-0123';

export const vectorServer = () => {
  const clock = { now: () => VECTOR_TS };
  const records = new MemoryRecordStore({ clock });
  const ledger = new Ledger({ objects: new MemoryObjectStore(), records, clock });
  const keys = new KeyService({ records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch;
  const client = new HefestoClient({
    baseUrl: 'http://hefesto.test',
    apiKey: ROOT,
    fetch,
    verify: true,
  });
  return { client, ledger };
};

export const harnessRun = async (client: HefestoClient, stream: string) => {
  const v1 = await resume(client, stream);
  await v1.checkpoint([{ op: 'set', path: '/notes', value: [] }]);
  await v1.checkpoint([{ op: 'set', path: '/notes/-', value: 'note 2' }]);
  const v2 = await resume(client, stream, {
    schema: {
      version: 2,
      upcasters: { 1: ({ notes, ...rest }) => ({ ...rest, entries: notes ?? [] }) },
    },
  });
  await v2.checkpoint([{ op: 'set', path: '/entries/-', value: 'entry 4' }]);
};

export const sessionRun = async (client: HefestoClient, stream: string) => {
  const v1 = new HefestoSession({ sessionId: stream, client });
  await v1.addItems([{ type: 'message', role: 'user', content: 'hi' }]);
  await v1.addItems([{ type: 'message', role: 'user', content: 'weather?' }]);
  const v2 = new HefestoSession({
    sessionId: stream,
    client,
    schema: {
      version: 2,
      upcasters: {
        1: (item) => ({ ...item, content: [{ type: 'input_text', text: item.content }] }),
      },
    },
  });
  await v2.getItems();
  await v2.addItems([
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'ok' }] },
  ]);
};
