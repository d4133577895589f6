import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  type DigestedWrite,
  emptyStateDigest,
  HefestoClient,
  type Json,
  pendingWritesDigest,
} from '../../packages/client/src/index.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { Ledger } from '../../shared/ledger/ledger.js';

/**
 * test/vectors/pending-writes.json through the client SDK (`@hefesto/client`, as packed):
 * `pendingWritesDigest` gives every vector's digest, and a server's checkpoint commits that
 * very digest for the writes of the checkpoint left before (docs/ledger-format.md, "Pending
 * writes"), which the client reads from the verified chain and recomputes from the writes the
 * server serves.
 * (test/unit/pending-writes-digest.test.ts checks the same file against the domain code.)
 */

interface Vectors {
  vectors: Array<{ name: string; writes: DigestedWrite[]; digest: string }>;
}

const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/pending-writes.json'), 'utf8'),
) as Vectors;

const ROOT = 'pending-writes-vectors-root-key-0123';

const client = () => {
  const clock = { now: () => Date.now() };
  const records = new MemoryRecordStore({ clock });
  const ledger = new Ledger({ objects: new MemoryObjectStore(), records, clock });
  const keys = new KeyService({ records, clock, rootKey: ROOT });
  const app = createApp({ ledger, keys, logger: pino({ level: 'silent' }), clock });
  const fetch = (async (input: string | URL | Request, init?: RequestInit) =>
    app.fetch(new Request(input, init))) as typeof globalThis.fetch;
  return new HefestoClient({ baseUrl: 'http://hefesto.test', apiKey: ROOT, fetch, verify: true });
};

describe('pending-write digest vectors in the client SDK', () => {
  it.each(vectors.vectors.map((v) => [v.name, v] as const))('%s', (_, v) => {
    expect(pendingWritesDigest(v.writes)).toBe(v.digest);
  });

  it('reads from the verified chain the digest the server committed for a superstep’s writes', async () => {
    const v = vectors.vectors.find((x) =>
      x.name.startsWith('one superstep'),
    ) as (typeof vectors.vectors)[number];
    const c = client();
    const first = await c.checkpoint('run', {
      ops: [{ op: 'set', path: '/n', value: 1 }],
      baseDigest: emptyStateDigest(2),
      label: 'c1',
    });
    const tasks = new Map<string, DigestedWrite[]>();
    for (const w of v.writes)
      tasks.set(`${w.taskPath}\n${w.taskId}`, [
        ...(tasks.get(`${w.taskPath}\n${w.taskId}`) ?? []),
        w,
      ]);
    for (const writes of tasks.values()) {
      const [{ taskId, taskPath }] = writes as [DigestedWrite];
      await c.putPendingWrites('run', 'c1', {
        taskId,
        taskPath,
        writes: writes.map((w) => ({ idx: w.idx, channel: w.channel, value: w.value as Json })),
      });
    }
    // c2 leaves c1 (its writes freeze), c3 binds them.
    const second = await c.checkpoint('run', {
      ops: [{ op: 'set', path: '/n', value: 2 }],
      baseDigest: first.stateDigest,
      label: 'c2',
      parentLabel: 'c1',
    });
    const next = await c.checkpoint('run', {
      ops: [{ op: 'set', path: '/n', value: 3 }],
      baseDigest: second.stateDigest,
      label: 'c3',
      parentLabel: 'c2',
    });
    const { events } = await c.readEvents('run', { from: next.seq, limit: 1 });
    expect(events[0]?.payload).toMatchObject({ pendingWrites: { label: 'c1', digest: v.digest } });
    const { writes } = await c.getPendingWrites('run', 'c1');
    expect(pendingWritesDigest(writes as DigestedWrite[])).toBe(v.digest);
  });
});
