import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HefestoClient } from '../../packages/client/src/index.js';
import { HefestoSaver, pendingResume, requestResume } from '../../packages/langgraph/src/index.js';
import { MemoryObjectStore } from '../../shared/adapters/memory/memory-object-store.js';
import { MemoryRecordStore } from '../../shared/adapters/memory/memory-record-store.js';
import { createApp } from '../../shared/http/app.js';
import { KeyService } from '../../shared/keys/keys.js';
import { compactionWorld, manualClock, settle } from '../support/compaction.js';
import { refundGraph, refundInput } from '../support/refund-graph.js';
import { type Backend, memory, ROOT } from './backends.js';

/**
 * pendingResume polls from where it stopped (packages/langgraph/src/resume-requests.ts): a
 * poll reads the events recorded since the last one (and the last event read, again), not the
 * whole resume stream; a resume stream begun anew (the thread deleted and run again) is read
 * from its start.
 */

describe('pendingResume polling', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await memory.start();
  });
  afterAll(async () => {
    await backend?.stop();
  });
  const cfg = (thread_id: string) => ({ configurable: { thread_id } });

  /** A saver whose client notes the `from` of each read of a resume stream. */
  const watched = () => {
    const reads: number[] = [];
    const client = new HefestoClient({
      baseUrl: backend.url,
      apiKey: ROOT,
      fetch: ((input: string | URL | Request, init?: RequestInit) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        if (url.pathname.endsWith('.resume/events') && (init?.method ?? 'GET') === 'GET')
          reads.push(Number(url.searchParams.get('from')));
        return fetch(input, init);
      }) as typeof fetch,
    });
    return { saver: new HefestoSaver({ client, prefix: 'poll' }), reads };
  };

  it('reads only what was recorded since the last poll', async () => {
    const writer = new HefestoSaver({ baseUrl: backend.url, apiKey: ROOT, prefix: 'poll' });
    const g = refundGraph(writer);
    await g.invoke(refundInput(), cfg('t'));
    const id = (await g.getState(cfg('t'))).config.configurable?.checkpoint_id as string;
    for (let i = 0; i < 120; i++) await requestResume(writer, 't', id, `v${i}`);

    const { saver, reads } = watched();
    expect(await pendingResume(saver, 't')).toMatchObject({ value: 'v119', seq: 120 });
    expect(reads).toEqual([1, 101]);
    reads.length = 0;
    // Nothing new: one read, of the last event seen.
    expect(await pendingResume(saver, 't')).toMatchObject({ value: 'v119' });
    expect(reads).toEqual([120]);
    reads.length = 0;
    await requestResume(writer, 't', 'another-checkpoint', 'x');
    await requestResume(writer, 't', id, 'last');
    expect(await pendingResume(saver, 't')).toMatchObject({ value: 'last', seq: 122 });
    expect(reads).toEqual([120]);
  });

  it('reads a resume stream begun anew (deleted, reclaimed, written again) from its start', async () => {
    // In process, with the compactor that reclaims a deleted stream so its id is free again.
    const clock = manualClock();
    const records = new MemoryRecordStore({ clock });
    const world = compactionWorld(
      { objects: new MemoryObjectStore(), records } as never,
      {},
      clock,
    );
    const keys = new KeyService({ records, clock, rootKey: ROOT });
    const app = createApp({ ledger: world.ledger, keys, logger: pino({ level: 'silent' }), clock });
    const reads: number[] = [];
    const client = () =>
      new HefestoClient({
        baseUrl: 'http://hefesto.test',
        apiKey: ROOT,
        fetch: ((input: string | URL | Request, init?: RequestInit) => {
          const url = new URL(input instanceof Request ? input.url : String(input));
          if (url.pathname.endsWith('.resume/events') && (init?.method ?? 'GET') === 'GET')
            reads.push(Number(url.searchParams.get('from')));
          return app.request(url.toString(), init);
        }) as typeof fetch,
      });
    const writer = new HefestoSaver({ client: client(), prefix: 'poll' });
    const g = refundGraph(writer);
    await g.invoke(refundInput(), cfg('again'));
    const id = (await g.getState(cfg('again'))).config.configurable?.checkpoint_id as string;
    for (let i = 0; i < 3; i++) await requestResume(writer, 'again', id, `old${i}`);
    const poller = new HefestoSaver({ client: client(), prefix: 'poll' });
    expect(await pendingResume(poller, 'again')).toMatchObject({ value: 'old2', seq: 3 });

    const resumes = `${writer.streamIdOf('again')}.resume`;
    await writer.client.deleteStream(resumes);
    await settle(world, (ms) => clock.advance(ms));
    await requestResume(new HefestoSaver({ client: client(), prefix: 'poll' }), 'again', id, 'new');
    reads.length = 0;
    expect(await pendingResume(poller, 'again')).toMatchObject({ value: 'new', seq: 1 });
    // The last event read is not there (seq 3 of the old life): read from the start.
    expect(reads).toEqual([3, 1]);
  });
});
