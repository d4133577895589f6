import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chunksOfValue,
  EMPTY_STATE_DIGEST_V2,
  readValue,
} from '../../shared/domain/state-v2/index.js';
import {
  createHarness,
  type Harness,
  type ProblemBody,
  readJson as read,
  STORE_FACTORIES,
} from './harness.js';

/** Large values over HTTP: PUT/GET /v1/chunks/{hash} and a checkpoint op that sets a ref. */

const big = {
  text: 'y'.repeat(600 * 1024),
  list: Array.from({ length: 300 }, (_, i) => `${i}`.repeat(20)),
};

describe.each(STORE_FACTORIES)('chunk routes on $name stores', (factory) => {
  let h: Harness;
  let key: string;
  const putChunk = (hash: string, bytes: Uint8Array, k = key, type = 'application/octet-stream') =>
    h.app.request(`/v1/chunks/${hash}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${k}`, 'content-type': type },
      body: bytes,
    });

  beforeEach(async () => {
    h = createHarness(factory);
    key = await h.newKey('acme');
  });
  afterEach(() => h.close());

  it('uploads a value chunk by chunk, sets it by ref, reads it back page by page', async () => {
    const { ref, chunks } = chunksOfValue(big);
    for (const c of chunks) expect((await putChunk(c.hash, c.bytes)).status).toBe(201);
    const again = chunks[0];
    if (again) expect((await putChunk(again.hash, again.bytes)).status).toBe(201); // idempotent
    const cp = await h.request('/v1/streams/doc/checkpoints', {
      key,
      body: { ops: [{ op: 'set', path: '/big', ref }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });
    expect(cp.status).toBe(201);
    const state = await read<{ state: { big: unknown } }>(
      h.request('/v1/streams/doc/state', { key }),
    );
    expect(state.state.big).toEqual(big);
    // A client reads the value chunk by chunk, each checked against its hash.
    const source = async (hash: string) => {
      const res = await h.request(`/v1/chunks/${hash}`, { key });
      return res.status === 200 ? new Uint8Array(await res.arrayBuffer()) : undefined;
    };
    expect((await readValue(ref.hash, source)).node.value).toEqual(big);
    // Another tenant sees none of it.
    const other = await h.newKey('globex');
    expect((await h.request(`/v1/chunks/${ref.hash}`, { key: other })).status).toBe(404);
  });

  it('refuses bad uploads and bad refs with problems', async () => {
    const { ref, chunks } = chunksOfValue(big);
    const [c] = chunks;
    if (!c) throw new Error('no chunk');
    const flipped = Uint8Array.from(c.bytes);
    flipped[5] = (flipped[5] ?? 0) ^ 1;
    const bad = await putChunk(c.hash, flipped);
    expect(bad.status).toBe(400);
    expect((await read<ProblemBody>(bad)).code).toBe('ErrInvalidInput');
    expect((await putChunk(c.hash, c.bytes, key, 'application/json')).status).toBe(415);
    expect((await putChunk(c.hash, new Uint8Array(2 * 1024 * 1024))).status).toBe(413);
    const reader = await h.newKey('acme', ['read']);
    expect((await putChunk(c.hash, c.bytes, reader)).status).toBe(403);
    // A ref before its chunks are uploaded: 422 naming the op and the chunk; a set with both
    // value and ref, or a size of 0: 400. Nothing written.
    const early = await h.request('/v1/streams/doc/checkpoints', {
      key,
      body: { ops: [{ op: 'set', path: '/big', ref }], baseDigest: EMPTY_STATE_DIGEST_V2 },
    });
    expect(early.status).toBe(422);
    const problem = await read<ProblemBody & { opIndex?: number; chunk?: string }>(early);
    expect(problem).toMatchObject({ code: 'ErrInvalidDelta', opIndex: 0, chunk: ref.hash });
    expect(problem.detail).not.toMatch(/tampered/);
    for (const op of [
      { op: 'set', path: '/big', ref, value: 1 },
      { op: 'set', path: '/big', ref: { hash: ref.hash, size: 0 } },
    ]) {
      const res = await h.request('/v1/streams/doc/checkpoints', {
        key,
        body: { ops: [op], baseDigest: EMPTY_STATE_DIGEST_V2 },
      });
      expect(res.status).toBe(400);
    }
    expect(await h.headSeq(key, 'doc')).toBeUndefined();
  });
});
