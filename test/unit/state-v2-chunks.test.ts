import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import {
  InvalidDeltaError,
  InvalidFormatError,
  InvalidInputError,
  NotFoundError,
  TamperedLedgerError,
} from '../../shared/domain/errors.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import type { JsonObject } from '../../shared/domain/state.js';
import {
  boundedSource,
  type Chunk,
  type ChunkSource,
  checkStateOps,
  chunkHashes,
  chunksOfValue,
  digestV2,
  listChunks,
  MAX_CHUNK_BYTES,
  MerkleState,
  readAt,
  readState,
  readValue,
  verifyChunk,
} from '../../shared/domain/state-v2/index.js';
import { choiceArb, chunkStore, deltaFor, stateArb } from './state-v2-arbitraries.js';

const chat = (messages: number): JsonObject => ({
  turn: messages,
  status: 'answered',
  messages: Array.from({ length: messages }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `message ${i} ${'lorem ipsum '.repeat(i % 20)}`,
  })),
  profile: { name: 'Zoë', tags: ['a', 'b'] },
});

describe('snapshot chunks v2', () => {
  it('round-trips any state through its chunks, each verifiable by its key alone', async () => {
    await fc.assert(
      fc.asyncProperty(stateArb, async (state) => {
        const ms = MerkleState.of(state);
        const list = listChunks(ms.root());
        expect(list.map((c) => c.hash)).toEqual(chunkHashes(ms.root()));
        expect(new Set(list.map((c) => c.hash)).size).toBe(list.length);
        expect(list.at(-1)?.hash).toBe(ms.digest()); // children first, the root last
        for (const c of list) {
          expect(c.bytes.length).toBeLessThanOrEqual(MAX_CHUNK_BYTES);
          expect(() => verifyChunk(c.bytes, c.hash)).not.toThrow();
        }
        const store = chunkStore();
        store.put(list);
        const back = await readState(ms.digest(), store.source);
        expect(back.digest()).toBe(ms.digest());
        expect(canonicalJson(back.state)).toBe(canonicalJson(state));
      }),
      { numRuns: 60 },
    );
  });

  it('counts MAX_DEPTH in containers: a leaf below one at depth 1000 builds and reads back, a container there is refused', async () => {
    // `[[...]]` n deep under member `a`: containers at depths 1..n, `bottom` at n + 1.
    const nest = (n: number, bottom: JsonValue): JsonObject => {
      let value = bottom;
      for (let i = 0; i < n; i++) value = [value];
      return { a: value };
    };
    const big = 'x'.repeat(2000); // a leaf stored as its own chunk
    for (const state of [nest(1000, 1), nest(1000, big), nest(999, [big])]) {
      const ms = MerkleState.of(state);
      const store = chunkStore();
      store.put(listChunks(ms.root()));

      const back = await readState(ms.digest(), store.source);

      expect(back.digest()).toBe(ms.digest());
      expect(canonicalJson(back.state)).toBe(canonicalJson(state));
    }
    for (const state of [nest(1001, 1), nest(1000, []), nest(1000, [big])]) {
      expect(() => MerkleState.of(state)).toThrow(/nests deeper than 1000/);
    }
  });

  it('writes only the new chunks of a changed state, and the old plus new read back', async () => {
    await fc.assert(
      fc.asyncProperty(
        stateArb,
        fc.array(fc.array(choiceArb, { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 6,
        }),
        async (state, deltas) => {
          const store = chunkStore();
          const ms = MerkleState.of(state);
          store.put(listChunks(ms.root()));
          let v1 = structuredClone(state);
          for (const choices of deltas) {
            const ops = deltaFor(v1, choices);
            try {
              ms.apply(ops);
            } catch {
              return; // refusals are the digest test's business
            }
            v1 = structuredClone(ms.state);
            const fresh = listChunks(ms.root(), (hash) => store.chunks.has(hash));
            for (const c of fresh) expect(store.chunks.has(c.hash)).toBe(false);
            store.put(fresh);
            const back = await readState(ms.digest(), store.source);
            expect(back.digest()).toBe(digestV2(v1));
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('lists a subtree that occurs twice once', async () => {
    const doc = { text: 'd'.repeat(3000), rows: Array.from({ length: 100 }, (_, i) => `row ${i}`) };
    const state = { a: doc, b: [doc, doc], c: { nested: doc }, s: 'x'.repeat(1_200_000) };
    const ms = MerkleState.of(state);
    const list = listChunks(ms.root());
    expect(new Set(list.map((c) => c.hash)).size).toBe(list.length);
    const store = chunkStore();
    store.put(list);
    expect((await readState(ms.digest(), store.source)).digest()).toBe(digestV2(state));
  });

  it('writes a handful of chunks per turn of a long chat, and none for an unchanged state', () => {
    const ms = MerkleState.of(chat(10_000));
    const known = new Set(chunkHashes(ms.root()));
    ms.apply([
      { op: 'set', path: '/turn', value: 10_001 },
      { op: 'set', path: '/status', value: 'tool_call' },
      { op: 'set', path: '/messages/-', value: { role: 'user', content: 'next' } },
    ]);
    const fresh = listChunks(ms.root(), (h) => known.has(h));
    // The root object, the messages root, one page per level below it, nothing else.
    expect(fresh.length).toBeLessThanOrEqual(4);
    expect(fresh.reduce((n, c) => n + c.bytes.length, 0)).toBeLessThan(16 * 1024);
    for (const c of fresh) known.add(c.hash);
    expect(listChunks(ms.root(), (h) => known.has(h))).toEqual([]);
  });

  it('fails closed on a tampered, missing or misplaced chunk', async () => {
    const ms = MerkleState.of(chat(300));
    const list = listChunks(ms.root());
    for (const victim of [0, Math.floor(list.length / 2), list.length - 1]) {
      const store = chunkStore();
      store.put(list);
      const target = list[victim] as Chunk;
      const flipped = Uint8Array.from(target.bytes);
      flipped[flipped.length - 1] = (flipped.at(-1) ?? 0) ^ 1;
      store.chunks.set(target.hash, flipped);
      await expect(readState(ms.digest(), store.source, { seq: 7 })).rejects.toMatchObject({
        code: 'ErrTamperedLedger',
        firstBadSeq: 7,
      });
      store.chunks.delete(target.hash);
      await expect(readState(ms.digest(), store.source)).rejects.toBeInstanceOf(
        TamperedLedgerError,
      );
    }
    // A page stored where a value should be: its hash is right, its place is not.
    const store = chunkStore();
    store.put(list);
    const page = list.find((c) => c.bytes[1] === 0x03) as Chunk;
    await expect(readValue(page.hash, store.source)).rejects.toBeInstanceOf(InvalidFormatError);
  });

  it('reads a digest from the verified chain as fast as its bytes allow, still failing closed', async () => {
    const ms = MerkleState.of(chat(500));
    const store = chunkStore();
    const list = listChunks(ms.root());
    store.put(list);
    const trusted = await readState(ms.digest(), store.source, { canonical: false });
    expect(trusted.digest()).toBe(ms.digest());
    expect(canonicalJson(trusted.state)).toBe(canonicalJson(ms.state));
    const page = list.find((c) => c.bytes[1] === 0x03) as Chunk;
    const flipped = Uint8Array.from(page.bytes);
    flipped[flipped.length - 3] = (flipped.at(-3) ?? 0) ^ 1;
    store.chunks.set(page.hash, flipped);
    await expect(readState(ms.digest(), store.source, { canonical: false })).rejects.toBeInstanceOf(
      TamperedLedgerError,
    );
  });

  it('refuses chunks that hash right but are not the canonical tree of their value', async () => {
    const store = chunkStore();
    const leaf = (json: string): Chunk => {
      const bytes = Buffer.concat([Buffer.from([2, 0]), Buffer.from(json)]);
      return { hash: sha256Hex(bytes), bytes };
    };
    const cases = [leaf('{"b":1,"a":2}'), leaf('{ "a": 1 }'), leaf('1.0'), leaf('"\\u0041"')];
    store.put(cases);
    for (const c of cases) {
      await expect(readValue(c.hash, store.source)).rejects.toBeInstanceOf(InvalidFormatError);
    }
    // An array of 65 items in one page (the rule cuts at 64), hashes all consistent.
    const items = Array.from({ length: 65 }, (_, i) => 'x'.repeat(20) + i);
    const slots = items.map((s) => {
      const json = Buffer.from(JSON.stringify(s));
      const head = Buffer.alloc(5);
      head.writeUInt32BE(json.length, 1);
      return Buffer.concat([head, json]);
    });
    const count = Buffer.alloc(8);
    count.writeUInt32BE(65, 4);
    const bytes = Buffer.concat([Buffer.from([2, 1]), count, Buffer.from([0]), ...slots]);
    const preimage = Buffer.concat([
      Buffer.from([2, 1]),
      count,
      Buffer.from([0]),
      ...items.map((s) =>
        Buffer.from(
          sha256Hex(Buffer.concat([Buffer.from([2, 0]), Buffer.from(JSON.stringify(s))])),
          'hex',
        ),
      ),
    ]);
    const hash = sha256Hex(preimage);
    expect(() => verifyChunk(bytes, hash)).not.toThrow();
    store.put([{ hash, bytes }]);
    await expect(readValue(hash, store.source)).rejects.toThrow(/not paged canonically/);
  });

  it('reads a path through the chunks on it only', async () => {
    const ms = MerkleState.of(chat(10_000));
    const store = chunkStore();
    store.put(listChunks(ms.root()));
    const value = await readAt(ms.digest(), '/messages/9876/content', store.source);
    expect(value).toBe(ms.state.messages && (ms.state.messages as JsonObject[])[9876]?.content);
    // The root object, the messages root, two pages below it: four chunks of ~230.
    expect(store.reads.length).toBe(4);
    await expect(readAt(ms.digest(), '/messages/10000', store.source)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(readAt(ms.digest(), 'messages', store.source)).rejects.toBeInstanceOf(
      InvalidInputError,
    );
  });

  it('bounds the fetches in flight', async () => {
    const ms = MerkleState.of(chat(3000));
    const store = chunkStore();
    store.put(listChunks(ms.root()));
    let running = 0;
    let most = 0;
    const slow: ChunkSource = async (hash) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 1));
      running--;
      return store.chunks.get(hash);
    };
    const back = await readState(ms.digest(), boundedSource(slow, 3));
    expect(back.digest()).toBe(ms.digest());
    expect(most).toBe(3);
  });
});

describe('large values by reference', () => {
  const big = () => ({
    text: 'é'.repeat(1_500_000),
    rows: Array.from({ length: 2000 }, (_, i) => ({ i })),
  });

  it('stores a value above any request as chunks of at most MAX_CHUNK_BYTES, set by one ref op', async () => {
    const value = big();
    const { ref, chunks } = chunksOfValue(value);
    expect(ref.size).toBe(Buffer.byteLength(canonicalJson(value)));
    expect(Math.max(...chunks.map((c) => c.bytes.length))).toBeLessThanOrEqual(MAX_CHUNK_BYTES);
    const store = chunkStore();
    store.put(chunks);
    const resolved = await readValue(ref.hash, store.source);
    const ms = MerkleState.of({ a: 1 });
    ms.apply([{ op: 'set', path: '/doc', ref }], (r) =>
      r.hash === ref.hash ? resolved : undefined,
    );
    expect(ms.digest()).toBe(digestV2({ a: 1, doc: value }));
    // Used twice, the second op gets its own copy.
    ms.apply([{ op: 'set', path: '/copy', ref }], () => resolved);
    ms.apply([{ op: 'set', path: '/copy/text', value: 'changed' }]);
    expect(ms.digest()).toBe(digestV2({ a: 1, doc: value, copy: { ...value, text: 'changed' } }));
  });

  it('refuses a ref it cannot resolve or that names another value', async () => {
    const { ref, chunks } = chunksOfValue(big());
    const store = chunkStore();
    store.put(chunks);
    const resolved = await readValue(ref.hash, store.source);
    const ms = MerkleState.of({});
    expect(() => ms.apply([{ op: 'set', path: '/doc', ref }])).toThrow(InvalidDeltaError);
    expect(() =>
      ms.apply([{ op: 'set', path: '/doc', ref: { ...ref, size: ref.size + 1 } }], () => resolved),
    ).toThrow(InvalidDeltaError);
    expect(checkStateOps([{ op: 'set', path: '/doc', ref }], 64 * 2 ** 20)).toHaveLength(1);
    expect(() => checkStateOps([{ op: 'set', path: '/doc', ref }], ref.size - 1)).toThrow(
      InvalidInputError,
    );
    expect(() => checkStateOps([{ op: 'set', path: '/d', ref, value: 1 }], 2 ** 30)).toThrow(
      InvalidInputError,
    );
    expect(() =>
      checkStateOps([{ op: 'set', path: '/d', ref: { hash: 'x', size: 1 } }], 2 ** 30),
    ).toThrow(InvalidInputError);
  });
});
