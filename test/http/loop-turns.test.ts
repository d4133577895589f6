import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  chunksOfValue,
  EMPTY_STATE_DIGEST_V2,
  eachChunk,
  listChunks,
} from '../../shared/domain/state-v2/index.js';
import { build } from '../../shared/domain/state-v2/node.js';
import type { ObjectStore } from '../../shared/ports/object-store.js';
import { Pacer } from '../../shared/state/loop-turns.js';
import { createHarness, type Harness, STORE_FACTORIES } from './harness.js';

/**
 * Issue 21 item 3: a large value set by ref, its base snapshot and a GET /state of it are
 * worked in steps with turns of the event loop between them (services/loop-turns.ts). With a
 * pacer of one step a turn (`sliceMs: 0`), a setImmediate ticker counts the turns: no two
 * chunk reads or writes land in one turn, and the streamed body comes in many turns. Counts,
 * not times: what is proved is that the work yields between its steps, whatever they cost.
 */

vi.setConfig({ testTimeout: 120_000 });

/** 4,000 records of ~300 bytes: about 1.2 MB in ~70 chunks. */
const VALUE = Array.from({ length: 4000 }, (_, i) => ({
  id: i,
  text: `record ${i} `.padEnd(300, String.fromCharCode(97 + (i % 26))),
}));

describe.each(STORE_FACTORIES)('turns of the event loop on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  let ticks = 0;
  let ticking = true;
  const tick = () => {
    ticks++;
    if (ticking) setImmediate(tick);
  };
  /** Turn of the loop at each chunk read or write, by kind. */
  const seen = { get: [] as number[], put: [] as number[] };
  const pacer = new Pacer({ sliceMs: 0 });
  const counted = (objects: ObjectStore): ObjectStore =>
    new Proxy(objects, {
      get(target, prop, receiver) {
        const f = Reflect.get(target, prop, receiver);
        if (prop !== 'get' && prop !== 'putIfAbsent') return f;
        return (k: string, ...rest: unknown[]) => {
          if (k.includes('/chunks/')) seen[prop === 'get' ? 'get' : 'put'].push(ticks);
          return (f as (...a: unknown[]) => unknown).call(target, k, ...rest);
        };
      },
    });

  beforeEach(async () => {
    h = createHarness(factory, { ledger: { snapshotEvery: 1, pacer }, wrapObjects: counted });
    key = await h.newKey('acme');
    ticking = true;
    setImmediate(tick);
  });
  afterEach(() => {
    ticking = false;
    h.close();
  });

  const perTurn = (turns: number[]) => {
    const counts = new Map<number, number>();
    for (const t of turns) counts.set(t, (counts.get(t) ?? 0) + 1);
    return Math.max(0, ...counts.values());
  };

  it('reads, verifies and writes a value set by ref one chunk a turn, and streams GET /state', async () => {
    const { ref, chunks } = chunksOfValue(VALUE);
    expect(chunks.length).toBeGreaterThan(50);
    for (const c of chunks) {
      const res = await h.app.request(`/v1/chunks/${c.hash}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
        body: c.bytes,
      });
      expect(res.status).toBe(201);
    }
    seen.get.length = 0;
    seen.put.length = 0;
    // The checkpoint measures and reads the value from its chunks, then writes the base.
    const before = pacer.turns;
    const res = await h.request('/v1/streams/big/checkpoints', {
      key,
      body: { ops: [{ op: 'set', path: '/v', ref }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });
    expect(res.status).toBe(201);
    expect(seen.get.length).toBeGreaterThanOrEqual(chunks.length);
    expect(perTurn(seen.get)).toBe(1);
    expect(perTurn(seen.put)).toBeLessThanOrEqual(1);
    // At least a turn per chunk verified twice (measured, then read) and per batch built.
    expect(pacer.turns - before).toBeGreaterThanOrEqual(2 * chunks.length);
    // A read of it: hydrated from the base's chunks, one a turn, and the body comes in pieces,
    // each serialized over turns of the loop.
    seen.get.length = 0;
    const read = await h.request('/v1/streams/big/state', { key });
    expect(read.status).toBe(200);
    expect(perTurn(seen.get)).toBe(1);
    const reader = read.body?.getReader();
    const pieceTurns: number[] = [];
    let text = '';
    const decoder = new TextDecoder();
    for (;;) {
      const next = await reader?.read();
      if (!next || next.done) break;
      pieceTurns.push(ticks);
      text += decoder.decode(next.value, { stream: true });
    }
    expect(JSON.parse(text).state.v).toEqual(VALUE);
    expect(pieceTurns.length).toBeGreaterThan(10);
    expect(perTurn(pieceTurns)).toBe(1);
  });

  it('encodes and puts the chunks of a whole tree one a turn', async () => {
    const [node] = build({ rows: VALUE }, 0);
    seen.put.length = 0;
    const written = await h.ledger.states.chunks.putChunks('acme', eachChunk(node));
    expect(written.count).toBe(listChunks(node).length);
    expect(seen.put.length).toBe(written.count);
    expect(perTurn(seen.put)).toBe(1);
  });
});
