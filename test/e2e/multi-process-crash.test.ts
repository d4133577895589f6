import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { genesisHash } from '../../shared/domain/event.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { waitUntil } from '../support/wait.js';
import { childrenOf, hasProc, killTree, spawnCollected, waitHealthy } from './process-tools.js';

/**
 * The multi-process embedded server (HEFESTO_WORKERS=2: a writer process that owns the data
 * dir, two workers that serve HTTP and send it their writes; functions/wiring/processes.ts),
 * killed at each of its processes with SIGKILL in the middle of concurrent appends, and a
 * writer's reply lost over IPC. Every request is retried with its Idempotency-Key until it
 * is answered: every acknowledged append must be there exactly once with the very answer it
 * had, nothing twice, and the chain must verify.
 */

const ROOT_KEY = 'root-key-for-multi-process-0123456789';
/**
 * One stream per client: concurrent appends to one stream race for its head (the loser reads
 * again; past 16 lost races it answers 503 "too contended", in one process too, more often
 * across workers), and here a 503 must mean the writer's death, nothing else.
 */
const streamOf = (c: number) => `mp-run-c${c}`;
const CLIENTS = 8;
const PER_CLIENT = 30;

interface Ack {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
}

const append = (url: string, c: number, i: number): Promise<Response> =>
  fetch(`${url}/v1/streams/${streamOf(c)}/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ROOT_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': `"c${c}-i${i}"`,
    },
    body: JSON.stringify({
      events: [
        { type: 'observation', payload: { client: c, i, part: 0 } },
        { type: 'observation', payload: { client: c, i, part: 1 } },
      ],
    }),
    // A request the server leaves hanging fails the test (the bound is far above any answer).
    signal: AbortSignal.timeout(20_000),
  });

/** Retries `c`/`i` until it is answered 201 (a cut connection, a 503, a 409 in progress). */
const appendUntilDone = async (url: string, c: number, i: number): Promise<Ack> => {
  for (let attempt = 0; attempt < 100; attempt++) {
    let res: Response;
    try {
      res = await append(url, c, i);
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') throw err;
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    if (res.status === 201) return (await res.json()) as Ack;
    expect([409, 503], `c${c}-i${i}: ${res.status}`).toContain(res.status);
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`c${c}-i${i} never answered 201`);
};

/** Every event once, each ack where it said, the chain verified by the client and /verify. */
const expectExactlyOnce = async (url: string, acks: Map<string, Ack>) => {
  for (let c = 0; c < CLIENTS; c++) await expectStreamExactlyOnce(url, c, acks);
};

const expectStreamExactlyOnce = async (url: string, client: number, acks: Map<string, Ack>) => {
  const STREAM = streamOf(client);
  const res = await fetch(`${url}/v1/streams/${STREAM}/events?limit=1000`, {
    headers: { authorization: `Bearer ${ROOT_KEY}` },
  });
  const { events } = (await res.json()) as {
    events: Array<{
      seq: number;
      ts: number;
      type: string;
      payload: { client: number; i: number; part: number };
      prevHash: string;
      hash: string;
    }>;
  };
  expect(events).toHaveLength(PER_CLIENT * 2);
  const seen = new Set(events.map((e) => `${e.payload.client}-${e.payload.i}-${e.payload.part}`));
  expect(seen.size).toBe(events.length);
  for (const [key, ack] of acks) {
    const [c, i] = key.slice(1).split('-i').map(Number);
    if (c !== client) continue;
    expect(events[ack.firstSeq - 1]?.payload).toEqual({ client: c, i, part: 0 });
    expect(events[ack.lastSeq - 1]?.hash).toBe(ack.head.hash);
  }
  expect(verifyEvents(events, { seq: 0, hash: genesisHash('default', STREAM) })).toMatchObject({
    ok: true,
  });
  const verify = await fetch(`${url}/v1/streams/${STREAM}/verify`, {
    headers: { authorization: `Bearer ${ROOT_KEY}` },
  });
  expect(await verify.json()).toMatchObject({ ok: true, seq: events.length });
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(!hasProc)('multi-process embedded server (HEFESTO_WORKERS=2)', () => {
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const start = async (dir: string) => {
    const server = await startServer({
      HEFESTO_DATA_DIR: dir,
      HEFESTO_API_KEY: ROOT_KEY,
      HEFESTO_WORKERS: '2',
    });
    servers.push(server);
    await waitUntil('two workers', () => childrenOf(server.child.pid ?? 0).length === 2);
    return server;
  };
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-mp-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const server of servers.splice(0)) killTree(server.child.pid);
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps serving when a worker is killed mid-request, and a retry is answered once', async () => {
    const server = await start(tempDir());
    const writer = server.child.pid ?? 0;
    const acks = new Map<string, Ack>();
    let killed: number | undefined;
    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < PER_CLIENT; i++) {
        const key = `c${c}-i${i}`;
        const ack = await appendUntilDone(server.url, c, i);
        const before = acks.get(key);
        if (before) expect(ack).toEqual(before);
        acks.set(key, ack);
      }
    });
    await waitUntil('a third acknowledged', () => acks.size >= (CLIENTS * PER_CLIENT) / 3, {
      timeoutMs: 60_000,
    });
    const [victim] = childrenOf(writer);
    killed = victim;
    expect(killed).toBeDefined();
    process.kill(killed ?? 0, 'SIGKILL');
    await Promise.all(clients);
    // The writer never stopped; it forked another worker in the dead one's place.
    expect(alive(writer)).toBe(true);
    await waitUntil('a new worker', () => {
      const now = childrenOf(writer);
      return now.length === 2 && !now.includes(killed ?? 0);
    });
    await expectExactlyOnce(server.url, acks);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 180_000);

  it('answers in-flight requests 503 when the writer is killed mid-batch; a restart loses nothing', async () => {
    const dir = tempDir();
    const first = await start(dir);
    const writer = first.child.pid ?? 0;
    const workers = childrenOf(writer);
    const acks = new Map<string, Ack>();
    const statuses: number[] = [];
    let killed = false;
    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < PER_CLIENT && !killed; i++) {
        let res: Response;
        try {
          res = await append(first.url, c, i);
        } catch (err) {
          // A timeout is a hang: fail. A cut or refused connection is an answer of sorts.
          if ((err as Error).name === 'TimeoutError') throw err;
          return;
        }
        statuses.push(res.status);
        if (res.status === 201) acks.set(`c${c}-i${i}`, (await res.json()) as Ack);
        else await res.body?.cancel();
      }
    });
    await waitUntil('a third acknowledged', () => acks.size >= (CLIENTS * PER_CLIENT) / 3, {
      timeoutMs: 60_000,
    });
    const answeredBefore = statuses.length;
    first.child.kill('SIGKILL');
    killed = true;
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(clients);
    // The requests waiting for the writer were answered, 503, not left hanging or cut.
    expect(statuses.slice(0, answeredBefore).every((s) => s === 201)).toBe(true);
    expect(statuses.slice(answeredBefore).filter((s) => s === 503).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 201 || s === 503)).toBe(true);
    // And the orphaned workers exit by themselves.
    await waitUntil('the workers gone', () => !workers.some(alive), { timeoutMs: 10_000 });

    const second = await start(dir);
    for (let c = 0; c < CLIENTS; c++) {
      for (let i = 0; i < PER_CLIENT; i++) {
        const key = `c${c}-i${i}`;
        const ack = await appendUntilDone(second.url, c, i);
        const before = acks.get(key);
        if (before) expect(ack).toEqual(before);
        acks.set(key, ack);
      }
    }
    await expectExactlyOnce(second.url, acks);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 180_000);

  it('answers 503 when the writer reply is lost, and the retry appends exactly once', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // The writer drops the reply of the first append's commit (lost-writer-reply-server.ts).
    const spawned = spawnCollected(
      process.execPath,
      ['--import', 'tsx', 'test/e2e/lost-writer-reply-server.ts'],
      {
        HEFESTO_DATA_DIR: tempDir(),
        HEFESTO_API_KEY: ROOT_KEY,
        HEFESTO_WORKERS: '2',
        HEFESTO_WRITER_TIMEOUT_MS: '1000',
        HEFESTO_LOG_LEVEL: 'warn',
        PORT: String(port),
      },
    );
    servers.push({ ...spawned, url });
    await waitHealthy(url, spawned, 60_000);
    const lost = await append(url, 0, 0);
    expect(lost.status).toBe(503);
    expect(await lost.json()).toMatchObject({ code: 'ErrUnavailable' });
    expect(spawned.output()).toContain('dropped-reply');
    const retried = await appendUntilDone(url, 0, 0);
    expect(retried).toMatchObject({ firstSeq: 1, lastSeq: 2 });
    const next = await appendUntilDone(url, 0, 1);
    expect(next).toMatchObject({ firstSeq: 3, lastSeq: 4 });
    const res = await fetch(`${url}/v1/streams/${streamOf(0)}/events?limit=10`, {
      headers: { authorization: `Bearer ${ROOT_KEY}` },
    });
    const { events } = (await res.json()) as { events: Array<{ payload: unknown }> };
    expect(events.map((e) => e.payload)).toEqual([
      { client: 0, i: 0, part: 0 },
      { client: 0, i: 0, part: 1 },
      { client: 0, i: 1, part: 0 },
      { client: 0, i: 1, part: 1 },
    ]);
    const verify = await fetch(`${url}/v1/streams/${streamOf(0)}/verify`, {
      headers: { authorization: `Bearer ${ROOT_KEY}` },
    });
    expect(await verify.json()).toMatchObject({ ok: true, seq: 4 });
    spawned.child.kill('SIGTERM');
    expect(await spawned.exited).toBe(0);
  }, 120_000);
});
