import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPORT_FORMAT, eventLine, headerLine } from '../../cli/export-format.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { Reader } from '../../shared/chain/reader.js';
import { HefestoClient } from '../../shared/client/client.js';
import type { LedgerEvent } from '../../shared/client/types.js';
import type { JsonObject } from '../../shared/domain/state.js';
import { digestV2 } from '../../shared/domain/state-v2/index.js';
import type { Item } from '../../shared/ports/record-store.js';
import { type EmbeddedServer, runCliHere, startEmbedded } from './in-process.js';

/**
 * An export written before state v2 (no `digestVersion` in its header: a v1 stream) imports
 * into a stream created now, which is v2: the importer checks each delta against the file's
 * v1 digests and sends the v2 digests of the same states.
 */

const KEY = 'import-v1-root-key-0123456789abcdef';
const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/v1-streams.json'), 'utf8'),
) as {
  clockMs: number;
  objects: Array<{ key: string; body: string }>;
  records: Item[];
  expect: { streams: Array<{ tenant: string; stream: string; finalState: JsonObject }> };
};

describe('hefesto import of a v1 export into a new (v2) stream', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-import-v1-'));
  const file = join(dir, 'globex-chat.ndjson');
  let server: EmbeddedServer;

  beforeAll(async () => {
    // The v1 fixture's globex/chat, read (verified) and written as the v1 code exported it.
    const objects = new MemoryObjectStore();
    const records = new MemoryRecordStore({ clock: { now: () => fixture.clockMs } });
    for (const o of fixture.objects)
      await objects.putIfAbsent(o.key, Buffer.from(o.body, 'base64'));
    for (const item of fixture.records) await records.put(item);
    const reader = new Reader({ objects, records });
    const { events } = await reader.readEvents('globex', 'chat', { from: 1, limit: 1000 });
    const last = events.at(-1) as LedgerEvent;
    const header = {
      format: EXPORT_FORMAT,
      tenant: 'globex',
      streamId: 'chat',
      head: { seq: last.seq, hash: last.hash },
      exportedAt: '2026-01-01T00:00:00.000Z',
    } as const;
    writeFileSync(
      file,
      `${[headerLine(header), ...(events as LedgerEvent[]).map(eventLine)].join('\n')}\n`,
    );
    server = await startEmbedded({ HEFESTO_API_KEY: KEY });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('translates every delta to v2 digests, checked against the file’s v1 digests', async () => {
    expect(JSON.parse(readFileSync(file, 'utf8').split('\n')[0] ?? '')).not.toHaveProperty(
      'digestVersion',
    );
    const env = { HEFESTO_URL: server.url, HEFESTO_KEY: KEY };
    const run = await runCliHere(['import', file, '--stream', 'chat-copy', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    const client = new HefestoClient({ baseUrl: server.url, apiKey: KEY, verify: true });
    const expected = fixture.expect.streams.find((s) => s.tenant === 'globex')?.finalState;
    const state = await client.getState('chat-copy');
    expect(state).toMatchObject({ digestVersion: 2, state: expected });
    expect(state.stateDigest).toBe(digestV2(expected as JsonObject));
    expect((await client.verifyLocally('chat-copy')).ok).toBe(true);
    // A rerun finds everything there (the translated bodies are the same: same keys).
    const again = await runCliHere(['import', file, '--stream', 'chat-copy', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ written: 0, skipped: 10 });
  });
});
