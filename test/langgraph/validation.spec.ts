import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deltaChannelHistoryTests, validate } from '@langchain/langgraph-checkpoint-validation';
import { describe, expect, it } from 'vitest';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';

/**
 * LangGraph's conformance suite (@langchain/langgraph-checkpoint-validation 1.1.1) against
 * the embedded server, under a checkpointer name of its own (so the changed-channels test,
 * skipped for MemorySaver and SqliteSaver, runs), plus the opt-in DeltaChannel history tests.
 * Each checkpointer gets a stream prefix of its own: `list` without a thread id lists every
 * thread of the saver, and the suite counts them exactly.
 */

const ROOT = 'root-key-for-validation-0123456789abcdef';
let server: ServerProcess | undefined;
const dataDir = mkdtempSync(join(tmpdir(), 'hefesto-lg-validation-'));
let n = 0;

const initializer = {
  checkpointerName: 'HefestoSaver (embedded)',
  beforeAllTimeout: 60_000,
  async beforeAll() {
    server = await startServer({ HEFESTO_DATA_DIR: dataDir, HEFESTO_API_KEY: ROOT });
  },
  async afterAll() {
    server?.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  },
  createCheckpointer: () =>
    new HefestoSaver({
      baseUrl: server?.url ?? '',
      apiKey: ROOT,
      prefix: `v${process.pid}-${++n}`,
    }),
};

validate(initializer);
deltaChannelHistoryTests(initializer);

describe('HefestoSaver beyond the suite', () => {
  const saver = (prefix: string) =>
    new HefestoSaver({ baseUrl: server?.url ?? '', apiKey: ROOT, prefix });
  const ckpt = (id: string, n: number) => ({
    v: 4,
    id,
    ts: new Date().toISOString(),
    channel_values: { messages: Array.from({ length: n }, (_, i) => `m${i}`) },
    channel_versions: { messages: n },
    versions_seen: {},
  });
  const meta = { source: 'loop' as const, step: 0, parents: {} };

  it('refuses a stale second worker instead of forking; explicit time travel still branches', async () => {
    const [a, b, c] = [saver('two'), saver('two'), saver('two')];
    const thread = { configurable: { thread_id: 'w', checkpoint_ns: '' } };
    expect(await a.getTuple(thread)).toBeUndefined();
    const p0 = await a.put(thread, ckpt('id-0', 1), meta, { messages: 1 });
    expect((await b.getTuple(thread))?.checkpoint.id).toBe('id-0');
    const p1 = await a.put(p0, ckpt('id-1', 2), meta, { messages: 2 });
    await expect(b.put(p0, ckpt('id-1b', 2), meta, { messages: 2 })).rejects.toThrow(
      /moved since this worker read it/,
    );
    expect((await c.getTuple(thread))?.checkpoint.id).toBe('id-1');
    // Time travel: a config naming the old checkpoint branches from it (one ledger).
    expect((await c.getTuple(p0))?.checkpoint.id).toBe('id-0');
    await c.put(p0, ckpt('id-2', 2), meta, { messages: 2 });
    const latest = await a.getTuple(thread);
    expect(latest?.checkpoint.id).toBe('id-2');
    expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe('id-0');
    expect((await a.getTuple(p1))?.checkpoint.channel_values).toEqual({ messages: ['m0', 'm1'] });
  });

  it('writes a messages list grown by one as one append op', async () => {
    const s = saver('ops');
    const thread = { configurable: { thread_id: 'g', checkpoint_ns: 'a|b' } };
    await s.getTuple(thread);
    let config = await s.put(thread, ckpt('g-0', 3), meta, { messages: 3 });
    config = await s.put(config, ckpt('g-1', 4), meta, { messages: 4 });
    const events = await s.client.readEvents(s.streamIdOf('g', 'a|b'), { type: 'hefesto.delta' });
    const second = events.events[1];
    const ops = second ? (second.payload as { ops: Array<{ path: string }> }).ops : [];
    expect(ops.filter((o) => o.path.startsWith('/values'))).toEqual([
      { op: 'set', path: '/values/messages/j/-', value: 'm3' },
    ]);
    expect(config.configurable?.checkpoint_ns).toBe('a|b');
  });
});
