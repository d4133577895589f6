import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLocalStores } from '../../shared/adapters/local/local-stores.js';
import { headKey } from '../../shared/chain/storage-keys.js';
import { genesisHash } from '../../shared/domain/event.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { waitUntil } from '../support/wait.js';
import { type Spawned, spawnCollected, waitForOutput } from './process-tools.js';

/**
 * The batching's crash windows (append.ts, steps 2a-3c; durable-writer.ts), on the local
 * adapters in a child-process server (group-commit-crash-server.ts, port 0): 16 writers
 * append concurrently, two per stream (so a batch holds commits of many streams, and head
 * races), and the server is killed with SIGKILL. Then, after a restart: every acknowledged
 * event is there exactly once, at the seq it was acknowledged with; every unacknowledged one
 * is there at most once, and its retry (same Idempotency-Key) completes it, exactly once;
 * every chain verifies.
 */

const ROOT_KEY = 'root-key-for-group-commit-crash-0123456789';
const WRITERS = 16;
const STREAMS = 8;

interface Ack {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
}

interface Event {
  seq: number;
  ts: number;
  type: string;
  payload: { w: number; i: number };
  prevHash: string;
  hash: string;
}

const streamOf = (w: number) => `gc-${w % STREAMS}`;
const keyOf = (w: number, i: number) => `w${w}-i${i}`;

const append = (url: string, w: number, i: number): Promise<Response> =>
  fetch(`${url}/v1/streams/${streamOf(w)}/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ROOT_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': `"${keyOf(w, i)}"`,
    },
    body: JSON.stringify({ events: [{ type: 'observation', payload: { w, i } }] }),
  });

const eventsOf = async (url: string, stream: string): Promise<Event[]> => {
  const res = await fetch(`${url}/v1/streams/${stream}/events?limit=1000`, {
    headers: { authorization: `Bearer ${ROOT_KEY}` },
  });
  if (res.status === 404) return [];
  expect(res.status).toBe(200);
  return ((await res.json()) as { events: Event[] }).events;
};

/** What the writers sent: acknowledgements, and the one request each had in flight. */
class Writers {
  readonly acks = new Map<string, Ack>();
  readonly next: number[];
  readonly unacknowledged = new Set<number>();

  constructor(readonly count = WRITERS) {
    this.next = Array.from({ length: count }, () => 0);
  }

  /** Runs the writers against `url` until the connection dies (each stops at its first error). */
  run(url: string): Promise<void> {
    return Promise.all(
      Array.from({ length: this.count }, async (_, w) => {
        for (;;) {
          const i = this.next[w] as number;
          this.unacknowledged.add(w);
          let res: Response;
          let body: string;
          try {
            res = await append(url, w, i);
            body = await res.text(); // the kill may cut the body after the status line
          } catch {
            return; // the kill cut the connection: this request stays unacknowledged
          }
          expect(res.status, `${keyOf(w, i)}: ${body}`).toBe(201);
          this.acks.set(keyOf(w, i), JSON.parse(body) as Ack);
          this.unacknowledged.delete(w);
          this.next[w] = i + 1;
        }
      }),
    ).then(() => undefined);
  }

  /**
   * After a restart: each unacknowledged request is there at most once, then its retry lands.
   * Returns the keys of those that were there before their retry (durable, never answered).
   */
  async retry(url: string): Promise<Set<string>> {
    const seen = new Map<string, number>();
    for (let s = 0; s < Math.min(this.count, STREAMS); s++) {
      for (const e of await eventsOf(url, `gc-${s}`)) {
        const key = keyOf(e.payload.w, e.payload.i);
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }
    const present = new Set<string>();
    for (const w of [...this.unacknowledged]) {
      const i = this.next[w] as number;
      const before = seen.get(keyOf(w, i)) ?? 0;
      expect(before, `${keyOf(w, i)} before its retry`).toBeLessThanOrEqual(1);
      if (before > 0) present.add(keyOf(w, i));
      for (let attempt = 0; ; attempt++) {
        const res = await append(url, w, i);
        if (res.status === 409 && attempt < 50) {
          // its segment is younger than the in-flight grace: its writer might still be at work
          const wait = Number(res.headers.get('retry-after') ?? '1');
          await new Promise((r) => setTimeout(r, wait * 1000));
          continue;
        }
        expect(res.status, keyOf(w, i)).toBe(201);
        this.acks.set(keyOf(w, i), (await res.json()) as Ack);
        break;
      }
      this.unacknowledged.delete(w);
      this.next[w] = i + 1;
    }
    return present;
  }

  /** Every acknowledged event exactly once, where it was acknowledged; every chain verifies. */
  async check(url: string): Promise<void> {
    let total = 0;
    for (let s = 0; s < Math.min(this.count, STREAMS); s++) {
      const stream = `gc-${s}`;
      const events = await eventsOf(url, stream);
      total += events.length;
      const keys = events.map((e) => keyOf(e.payload.w, e.payload.i));
      expect(new Set(keys).size, `${stream}: an event twice`).toBe(keys.length);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, n) => n + 1));
      expect(verifyEvents(events, { seq: 0, hash: genesisHash('default', stream) })).toMatchObject({
        ok: true,
      });
      const verify = await fetch(`${url}/v1/streams/${stream}/verify`, {
        headers: { authorization: `Bearer ${ROOT_KEY}` },
      });
      expect(await verify.json()).toMatchObject({ ok: true, seq: events.length });
    }
    expect(total).toBe(this.acks.size);
    for (const [key, ack] of this.acks) {
      const [w, i] = key.slice(1).split('-i').map(Number) as [number, number];
      const events = await eventsOf(url, streamOf(w));
      expect(events[ack.firstSeq - 1]?.payload, key).toEqual({ w, i });
      expect(events[ack.lastSeq - 1]?.hash, key).toBe(ack.head.hash);
    }
  }
}

interface CrashServer extends Spawned {
  url: string;
}

/** Starts group-commit-crash-server.ts on port 0; `crash`: where it kills itself. */
const startCrashServer = async (
  env: Record<string, string>,
  crash?: { at: 'segments' | 'commits'; after: number; minAppends?: number },
): Promise<CrashServer> => {
  const spawned = spawnCollected(
    process.execPath,
    ['--import', 'tsx', 'test/e2e/group-commit-crash-server.ts'],
    {
      ...env,
      HEFESTO_LOG_LEVEL: 'warn',
      ...(crash ? { CRASH_AT: crash.at, CRASH_AFTER: String(crash.after) } : {}),
      ...(crash?.minAppends ? { CRASH_MIN_APPENDS: String(crash.minAppends) } : {}),
    },
  );
  await waitForOutput(spawned, /listening \d+/, 30_000);
  const port = /listening (\d+)/.exec(spawned.output())?.[1];
  return { ...spawned, url: `http://127.0.0.1:${port}` };
};

/** Starts the server and SIGKILLs it once `writers` has `acks` acknowledgements more. */
const killDuringLoad = async (env: Record<string, string>, writers: Writers, acks: number) => {
  const server = await startCrashServer(env);
  await writers.retry(server.url);
  const target = writers.acks.size + acks;
  const running = writers.run(server.url);
  await waitUntil(`${acks} more acknowledgements`, () => writers.acks.size >= target, {
    timeoutMs: 60_000,
    everyMs: 2,
  });
  server.child.kill('SIGKILL');
  expect(await server.exited).toBe('SIGKILL');
  await running;
  return server;
};

/** Restarts the server, retries what was never answered, checks everything, stops it. */
const restartAndCheck = async (env: Record<string, string>, writers: Writers) => {
  const server = await startCrashServer(env);
  try {
    const present = await writers.retry(server.url);
    await writers.check(server.url);
    return present;
  } finally {
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }
};

describe('the embedded server killed with SIGKILL during group commits', () => {
  const dirs: string[] = [];
  const servers: Spawned[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-group-commit-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const s of servers) s.child.kill('SIGKILL');
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const envOf = (dir: string) => ({ HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT_KEY });

  it('keeps every acknowledged event once; every other is absent or completed by its retry', async () => {
    const env = envOf(tempDir());
    const writers = new Writers();
    for (let round = 0; round < 3; round++) servers.push(await killDuringLoad(env, writers, 80));
    expect(writers.unacknowledged.size).toBeGreaterThan(0);
    await restartAndCheck(env, writers);
  }, 180_000);

  it('recovers a batch killed between its segments and its transactions (2b)', async () => {
    const dir = tempDir();
    const env = envOf(dir);
    const writers = new Writers();
    const crashing = await startCrashServer(env, { at: 'segments', after: 10 });
    servers.push(crashing);
    await writers.run(crashing.url);
    expect(await crashing.exited).toBe('SIGKILL');
    expect(writers.acks.size).toBeGreaterThan(0);

    // What the kill left of the batch it was killed in (two segments or more, durable, not
    // answered): each is an orphan at its stream's head+1, or was rolled forward by the
    // stream's other writer, which can read it from the database after the batch committed
    // and before its answers reach the appends (the head then covers it). Nothing else.
    const killed = /killed-batch (\[.*\])/.exec(crashing.output())?.[1];
    const batch = JSON.parse(killed ?? '[]') as string[];
    expect(batch.length, crashing.output()).toBeGreaterThanOrEqual(2);
    const { objects, records } = openLocalStores(dir);
    const fates: string[] = [];
    try {
      for (const key of batch) {
        const [, stream, first] = /^t\/default\/s\/([^/]+)\/seg\/(\d+)$/.exec(key) ?? [];
        const head = await records.get(headKey('default', stream ?? ''));
        const seq = typeof head?.seq === 'number' ? head.seq : 0;
        expect(await objects.head(key), key).toBeDefined();
        fates.push(Number(first) === seq + 1 ? 'orphan' : Number(first) <= seq ? 'rolled' : key);
      }
    } finally {
      objects.close();
      records.close();
    }
    expect(
      fates.filter((f) => f !== 'orphan' && f !== 'rolled'),
      fates.join(),
    ).toEqual([]);
    await restartAndCheck(env, writers);
  }, 120_000);

  it('answers the retries of a batch killed after its transaction, before its answers (3c)', async () => {
    // Durable but never answered: the commits of the batch it was killed in (two or more).
    // Their retries answer them from their idempotency records, at the seq they committed at.
    // A commit of the batch may be one writer rolling another's segment forward: its owner
    // can read it from the database once the batch committed, before the batch's answers
    // arrive, and answer its client. So each commit of the batch is either unanswered, and
    // there before its retry, or answered and checked with every acknowledgement; a run
    // whose batch was all answered that way tests no retry, and is run again (at most 5).
    for (let run = 1; ; run++) {
      const env = envOf(tempDir());
      const writers = new Writers();
      const crashing = await startCrashServer(env, { at: 'commits', after: 10 });
      servers.push(crashing);
      await writers.run(crashing.url);
      expect(await crashing.exited).toBe('SIGKILL');
      expect(writers.acks.size).toBeGreaterThan(0);
      const killed = /killed-batch (\[.*\])/.exec(crashing.output())?.[1];
      const batch = (JSON.parse(killed ?? '[]') as string[]).map((k) =>
        k.replace(/^ikey#[^#]*#/, ''),
      );
      expect(batch.length, crashing.output()).toBeGreaterThanOrEqual(2);
      const unanswered = batch.filter((key) => !writers.acks.has(key));
      const present = await restartAndCheck(env, writers);
      expect(unanswered.filter((key) => !present.has(key))).toEqual([]);
      if (unanswered.length > 0) return;
      expect(run, 'every killed batch was answered before the kill').toBeLessThan(5);
    }
  }, 240_000);

  // One writer, one append at a time (a LangGraph saver's puts): each append is a segment
  // transaction without a sync, then the head's transaction, whose sync covers both (one
  // fsync an append; none in the process-crash mode). Killed between the two, or after the
  // second before its answer, in each durability mode.
  describe.each(['power-loss', 'process-crash'])('one writer, durability %s', (durability) => {
    it("keeps the segment an unsynced commit wrote: the append's retry commits it", async () => {
      const dir = tempDir();
      const env = { ...envOf(dir), HEFESTO_DURABILITY: durability };
      const writers = new Writers(1);
      const crashing = await startCrashServer(env, { at: 'segments', after: 5, minAppends: 1 });
      servers.push(crashing);
      await writers.run(crashing.url);
      expect(await crashing.exited).toBe('SIGKILL');
      expect(writers.acks.size).toBe(4);
      const [key] = JSON.parse(/killed-batch (\[.*\])/.exec(crashing.output())?.[1] ?? '[]');
      const { objects, records } = openLocalStores(dir);
      try {
        // The orphan at head+1 (append.ts, step 2's window): durable, not committed.
        expect(await objects.head(key), key).toBeDefined();
        expect((await records.get(headKey('default', 'gc-0')))?.seq).toBe(4);
      } finally {
        objects.close();
        records.close();
      }
      const present = await restartAndCheck(env, writers);
      expect(present.size).toBe(0);
      expect(writers.acks.size).toBe(5);
    }, 60_000);

    it('answers the retry of a commit killed before its answer from its record', async () => {
      const env = { ...envOf(tempDir()), HEFESTO_DURABILITY: durability };
      const writers = new Writers(1);
      const crashing = await startCrashServer(env, { at: 'commits', after: 5, minAppends: 1 });
      servers.push(crashing);
      await writers.run(crashing.url);
      expect(await crashing.exited).toBe('SIGKILL');
      expect(writers.acks.size).toBe(4);
      const present = await restartAndCheck(env, writers);
      expect([...present]).toEqual(['w0-i4']);
    }, 60_000);
  });
});
