import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { LocalObjectStore } from '../../shared/adapters/local/local-object-store.js';
import { LocalRecordStore } from '../../shared/adapters/local/local-record-store.js';
import { genesisHash } from '../../shared/domain/event.js';
import { segmentKey } from '../../shared/domain/segment.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { headKey } from '../../shared/services/layout.js';
import { spawnCollected, waitForOutput } from './process-tools.js';

/**
 * The batching's crash windows (shared/adapters/local/durable-writer.ts, append.ts), on the
 * local adapters in a child-process server: 16 writers append concurrently, two per stream
 * (so a batch holds commits of many streams, and head races), and the server is killed with
 * SIGKILL. Then, after a restart: every acknowledged event is there exactly once, at the seq
 * it was acknowledged with; every unacknowledged one is there at most once, and its retry
 * (same Idempotency-Key) completes it, exactly once; every chain verifies.
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
  readonly next = Array.from({ length: WRITERS }, () => 0);
  readonly unacknowledged = new Set<number>();

  /** Runs the writers against `url` until the connection dies (each stops at its first error). */
  run(url: string): Promise<void> {
    return Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (;;) {
          const i = this.next[w] as number;
          this.unacknowledged.add(w);
          let res: Response;
          try {
            res = await append(url, w, i);
          } catch {
            return; // the kill cut the connection: this request stays unacknowledged
          }
          expect(res.status, keyOf(w, i)).toBe(201);
          this.acks.set(keyOf(w, i), (await res.json()) as Ack);
          this.unacknowledged.delete(w);
          this.next[w] = i + 1;
        }
      }),
    ).then(() => undefined);
  }

  /** After a restart: each unacknowledged request is there at most once, then its retry lands. */
  async retry(url: string): Promise<void> {
    const seen = new Map<string, number>();
    for (let s = 0; s < STREAMS; s++) {
      for (const e of await eventsOf(url, `gc-${s}`)) {
        const key = keyOf(e.payload.w, e.payload.i);
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }
    for (const w of [...this.unacknowledged]) {
      const i = this.next[w] as number;
      expect(seen.get(keyOf(w, i)) ?? 0, `${keyOf(w, i)} before its retry`).toBeLessThanOrEqual(1);
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
  }

  /** Every acknowledged event exactly once, where it was acknowledged; every chain verifies. */
  async check(url: string): Promise<void> {
    let total = 0;
    for (let s = 0; s < STREAMS; s++) {
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

/** Starts the real server and resolves once `writers` has `acks` acknowledgements more. */
const killDuringLoad = async (env: Record<string, string>, writers: Writers, acks: number) => {
  const server = await startServer(env);
  await writers.retry(server.url);
  const target = writers.acks.size + acks;
  const running = writers.run(server.url);
  while (writers.acks.size < target) await new Promise((r) => setTimeout(r, 2));
  server.child.kill('SIGKILL');
  expect(await server.exited).toBe('SIGKILL');
  await running;
  return server;
};

describe('the embedded server killed with SIGKILL during group commits', () => {
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'hefesto-group-commit-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const s of servers) s.child.kill('SIGKILL');
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged event once; every other is absent or completed by its retry', async () => {
    const env = { HEFESTO_DATA_DIR: tempDir(), HEFESTO_API_KEY: ROOT_KEY };
    const writers = new Writers();
    for (let round = 0; round < 3; round++) servers.push(await killDuringLoad(env, writers, 80));
    expect(writers.unacknowledged.size).toBeGreaterThan(0);

    const last = await startServer(env);
    servers.push(last);
    await writers.retry(last.url);
    await writers.check(last.url);
    last.child.kill('SIGTERM');
    expect(await last.exited).toBe(0);
  }, 180_000);

  it('recovers a batch killed between its segments and its transactions', async () => {
    const dir = tempDir();
    const env = { HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT_KEY, HEFESTO_LOG_LEVEL: 'warn' };
    const writers = new Writers();
    const port = await freePort();
    const crashing = spawnCollected(
      process.execPath,
      ['--import', 'tsx', 'test/e2e/group-commit-crash-server.ts'],
      { ...env, PORT: `${port}`, CRASH_AFTER_SEGMENTS: '120' },
    );
    await waitForOutput(crashing, 'listening', 30_000);
    await writers.run(`http://127.0.0.1:${port}`);
    expect(await crashing.exited).toBe('SIGKILL');
    expect(writers.acks.size).toBeGreaterThan(0);

    // What the kill left: segments at head+1 that no transaction moved a head over.
    const objects = new LocalObjectStore({ dir });
    const records = new LocalRecordStore({ path: join(dir, 'records.sqlite') });
    let orphans = 0;
    try {
      for (let s = 0; s < STREAMS; s++) {
        const head = await records.get(headKey('default', `gc-${s}`));
        const seq = typeof head?.seq === 'number' ? head.seq : 0;
        if (await objects.head(segmentKey('default', `gc-${s}`, seq + 1))) orphans++;
      }
    } finally {
      objects.close();
      records.close();
    }
    expect(orphans, crashing.output()).toBeGreaterThanOrEqual(2);

    const server = await startServer(env);
    servers.push(server);
    await writers.retry(server.url);
    await writers.check(server.url);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  }, 120_000);
});
