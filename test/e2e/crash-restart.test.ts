import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../../scripts/lib/server-process.js';
import { genesisHash } from '../../shared/domain/event.js';
import { verifyEvents } from '../../shared/domain/verify.js';
import { waitUntil } from '../support/wait.js';

/**
 * The embedded server is killed with SIGKILL in the middle of concurrent appends, restarted
 * on the same data directory, and every request is retried with its Idempotency-Key: every
 * acknowledged append must be there exactly once, nothing twice, and the chain must verify.
 */

const ROOT_KEY = 'root-key-for-crash-test-0123456789';
const STREAM = 'crash-run';
const CLIENTS = 8;
const PER_CLIENT = 40;

interface Ack {
  firstSeq: number;
  lastSeq: number;
  head: { seq: number; hash: string };
}

const requestBody = (c: number, i: number) => ({
  events: [
    { type: 'observation', payload: { client: c, i, part: 0 } },
    { type: 'observation', payload: { client: c, i, part: 1 } },
  ],
});

const append = async (url: string, c: number, i: number): Promise<Response> =>
  fetch(`${url}/v1/streams/${STREAM}/events`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${ROOT_KEY}`,
      'content-type': 'application/json',
      'idempotency-key': `"c${c}-i${i}"`,
    },
    body: JSON.stringify(requestBody(c, i)),
  });

describe('embedded server killed with SIGKILL mid-append', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hefesto-crash-'));
  let server: ServerProcess | undefined;
  afterAll(() => {
    server?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every acknowledged event exactly once and the chain verifiable', async () => {
    const env = { HEFESTO_DATA_DIR: dir, HEFESTO_API_KEY: ROOT_KEY };
    server = await startServer(env);
    const first = server;
    const acks = new Map<string, Ack>();
    let killed = false;

    const clients = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < PER_CLIENT && !killed; i++) {
        try {
          const res = await append(first.url, c, i);
          if (res.status === 201) acks.set(`c${c}-i${i}`, (await res.json()) as Ack);
        } catch {
          return; // connection cut by the kill
        }
      }
    });
    // Kill once a good share of appends has been acknowledged, while others are in flight.
    await waitUntil(
      'a third of the appends acknowledged',
      () => acks.size >= (CLIENTS * PER_CLIENT) / 3,
      {
        timeoutMs: 60_000,
      },
    );
    first.child.kill('SIGKILL');
    killed = true;
    expect(await first.exited).toBe('SIGKILL');
    await Promise.all(clients);
    const ackedBeforeKill = acks.size;
    expect(ackedBeforeKill).toBeGreaterThan(0);

    server = await startServer(env);
    const second = server;
    for (let c = 0; c < CLIENTS; c++) {
      for (let i = 0; i < PER_CLIENT; i++) {
        for (let attempt = 0; ; attempt++) {
          const res = await append(second.url, c, i);
          if (res.status === 409 && attempt < 50) {
            const wait = Number(res.headers.get('retry-after') ?? '1');
            await new Promise((r) => setTimeout(r, wait * 1000));
            continue;
          }
          expect(res.status, `c${c}-i${i}`).toBe(201);
          const body = (await res.json()) as Ack;
          const before = acks.get(`c${c}-i${i}`);
          // An append acknowledged before the kill answers with the very same result.
          if (before) expect(body).toEqual(before);
          acks.set(`c${c}-i${i}`, body);
          break;
        }
      }
    }

    const res = await fetch(`${second.url}/v1/streams/${STREAM}/events?limit=1000`, {
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
    expect(events).toHaveLength(CLIENTS * PER_CLIENT * 2);
    const seen = new Set(events.map((e) => `${e.payload.client}-${e.payload.i}-${e.payload.part}`));
    expect(seen.size).toBe(events.length);
    for (const [key, ack] of acks) {
      const [c, i] = key.slice(1).split('-i').map(Number);
      expect(events[ack.firstSeq - 1]?.payload).toEqual({ client: c, i, part: 0 });
      expect(events[ack.lastSeq - 1]?.hash).toBe(ack.head.hash);
    }
    expect(verifyEvents(events, { seq: 0, hash: genesisHash('default', STREAM) })).toMatchObject({
      ok: true,
    });
    const verify = await fetch(`${second.url}/v1/streams/${STREAM}/verify`, {
      headers: { authorization: `Bearer ${ROOT_KEY}` },
    });
    expect(await verify.json()).toMatchObject({ ok: true, seq: events.length });

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 120_000);
});
