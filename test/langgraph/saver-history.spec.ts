import type { RunnableConfig } from '@langchain/core/runnables';
import { BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import { HefestoSaver } from '../../packages/langgraph/src/index.js';
import { PENDING_WRITE_PREFIX, streamPk } from '../../shared/chain/storage-keys.js';
import { createHarness, type Harness, ROOT_KEY, STORE_FACTORIES } from '../http/harness.js';

/**
 * HefestoSaver's getDeltaChannelHistory (one request) answers what the base class's walk (one
 * getTuple per ancestor, over the same saver) answers, on random checkpoint trees: branches
 * (time travel), channels present or not on each checkpoint, several tasks' writes in random
 * task paths, writes landing after their checkpoint was left (the ledger path).
 */

const mulberry32 = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const CHANNELS = ['a', 'b', 'c'];
const meta = { source: 'loop' as const, step: 0, parents: {} };

describe.each(STORE_FACTORIES)('getDeltaChannelHistory on $name', (factory) => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness(factory);
  });
  afterEach(() => h.close());
  const saverOf = (prefix: string) =>
    new HefestoSaver({
      client: new HefestoClient({
        baseUrl: 'http://in-process',
        apiKey: ROOT_KEY,
        fetch: ((input: string | URL | Request, init?: RequestInit) =>
          h.app.fetch(new Request(input, init))) as typeof fetch,
      }),
      prefix,
    });
  const at = (thread: string, id: string) => ({
    configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: id },
  });

  /** A random tree of `n` checkpoints with writes; answers the ids in the order written. */
  const randomTree = async (saver: HefestoSaver, thread: string, seed: number, n: number) => {
    const rnd = mulberry32(seed);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)] as T;
    const ids: string[] = [];
    let config: RunnableConfig = {
      configurable: { thread_id: thread, checkpoint_ns: '' },
    };
    for (let i = 0; i < n; i++) {
      const id = `c${String(i).padStart(3, '0')}`;
      // Mostly on from the latest; sometimes from an older one (a branch).
      if (ids.length > 2 && rnd() < 0.2) config = at(thread, pick(ids));
      const values: Record<string, unknown> = {};
      const versions: Record<string, number> = {};
      for (const ch of CHANNELS) {
        if (rnd() < 0.8) versions[ch] = i + 1;
        if (versions[ch] !== undefined && rnd() < 0.3) values[ch] = { ch, at: i };
      }
      const checkpoint: Checkpoint = {
        v: 4,
        id,
        ts: new Date(1_700_000_000_000 + i).toISOString(),
        channel_values: values,
        channel_versions: versions,
        versions_seen: {},
      };
      config = await saver.put(config, checkpoint, meta, versions);
      ids.push(id);
      const tasks = Math.floor(rnd() * 3);
      for (let t = 0; t < tasks; t++) {
        const writes = Array.from(
          { length: 1 + Math.floor(rnd() * 3) },
          (_, k) => [pick([...CHANNELS, 'other']), `${id}-t${t}-${k}`] as [string, unknown],
        );
        await saver.putWrites(
          config,
          writes,
          `task-${pick(['x', 'y', 'z'])}${t}`,
          pick(['', '~p, 1', '~p, 0', 'n']),
        );
      }
      // Now and then a write to a checkpoint already left (a hefesto.writes event).
      if (ids.length > 3 && rnd() < 0.15) {
        await saver.putWrites(
          at(thread, pick(ids.slice(0, -2))),
          [[pick(CHANNELS), `late-${i}`]],
          `late-${i}`,
        );
      }
    }
    return ids;
  };

  it('answers the base walk’s histories on random trees, for every checkpoint', {
    timeout: 120_000,
  }, async () => {
    for (const seed of [1, 2]) {
      const saver = saverOf(`h${seed}`);
      const thread = `t${seed}`;
      const ids = await randomTree(saver, thread, seed, 24);
      const configs = [
        { configurable: { thread_id: thread, checkpoint_ns: '' } },
        ...ids.map((id) => at(thread, id)),
      ];
      for (const config of configs) {
        for (const channels of [CHANNELS, ['c', 'missing']]) {
          const ours = await saver.getDeltaChannelHistory({ config, channels });
          const walked = await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, {
            config,
            channels,
          });
          expect(ours, `${seed} ${JSON.stringify(config)} ${channels}`).toEqual(walked);
        }
      }
    }
  });

  it('refuses an ancestor’s tampered pending write (ErrTamperedLedger)', async () => {
    const saver = saverOf('ht');
    const ids = await randomTree(saver, 'tt', 7, 12);
    const pk = streamPk('default', 'ht.tt.');
    const items = (await h.records.query(pk, { skPrefix: PENDING_WRITE_PREFIX, limit: 1000 }))
      .items;
    // A write of an old checkpoint, bound by the chain by now.
    const victim = items.find((i) => String(i.sk).startsWith(`${PENDING_WRITE_PREFIX}${ids[1]}#`));
    expect(victim).toBeDefined();
    await h.records.put({ ...victim, valueJson: JSON.stringify({ j: 'forged' }) } as never);

    await expect(
      saver.getDeltaChannelHistory({ config: at('tt', ids.at(-1) as string), channels: CHANNELS }),
    ).rejects.toMatchObject({ code: 'ErrTamperedLedger' });
  });
});
