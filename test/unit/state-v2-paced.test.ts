import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../shared/domain/canonical.js';
import {
  chunkHashes,
  chunksOfValue,
  digestV2,
  eachChunk,
  listChunks,
  readState,
  readValue,
} from '../../shared/domain/state-v2/index.js';
import { build } from '../../shared/domain/state-v2/node.js';
import { buildTree, buildTreePaced, rootHash } from '../../shared/domain/state-v2/seq-tree.js';
import {
  type ContainerKind,
  Kind,
  type Level,
  type SeqTree,
} from '../../shared/domain/state-v2/types.js';
import { jsonPieces } from '../../shared/http/json-stream.js';
import { chunkStore, stateArb } from './state-v2-arbitraries.js';

/**
 * Issue 21 item 3: large values are read, hashed and serialized in steps, with the caller's
 * `pause` asked between them (services/loop-turns.ts gives the event loop a turn there). What
 * the steps build is byte for byte what the one-go functions build; the counts of `pause`
 * calls show the work is cut into steps of a bounded size (never a timing).
 */

/** A `pause` that never waits, counting how often it was asked. */
const counting = () => {
  let calls = 0;
  return {
    pause: () => {
      calls++;
      return undefined;
    },
    calls: () => calls,
  };
};

const records = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: i, text: `record ${i} `.padEnd(300, 'x') }));

const wideObject = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`key-${i}`, `value ${i}`.padEnd(40)]));

describe('buildTreePaced', () => {
  it.each([
    ['an array of 65 items', Kind.Array, records(65)],
    ['an array of 20,000 items (three levels)', Kind.Array, records(20_000)],
    ['an object of 40 members', Kind.Object, wideObject(40)],
    ['an object of 20,000 members', Kind.Object, wideObject(20_000)],
  ] as Array<[string, ContainerKind, JsonValue]>)(
    'builds the tree buildTree builds for %s, asking pause every 32 pages',
    async (_name, kind, value) => {
      const [node] = build(value, 0);
      const entries = ((node.tree as SeqTree).levels[0] as Level).entries;
      const spy = counting();
      const paced = await buildTreePaced(kind, entries, spy.pause);
      const whole = buildTree(kind, entries);
      expect(paced.levels.map((l) => l.ends)).toEqual(whole.levels.map((l) => l.ends));
      expect(rootHash(kind, paced).equals(node.hash)).toBe(true);
      const pages = whole.levels.slice(0, -1).reduce((n, l) => n + l.ends.length, 0);
      expect(spy.calls()).toBeGreaterThanOrEqual(Math.ceil(pages / 32));
    },
  );
});

describe('reads with pause', () => {
  it('rebuild the same tree as reads without, asking pause before every chunk and batch', async () => {
    const value = { rows: records(5000), index: wideObject(3000) };
    const { ref, chunks } = chunksOfValue(value);
    const store = chunkStore();
    store.put(chunks);
    const spy = counting();
    const paced = await readValue(ref.hash, store.source, { pause: spy.pause });
    const plain = await readValue(ref.hash, store.source);
    expect(paced.node.hash.equals(plain.node.hash)).toBe(true);
    expect(paced.node.value).toEqual(value);
    // One step per chunk verified, one per batch of entries assembled, more for the pages.
    const entries = 5000 + 3000;
    expect(spy.calls()).toBeGreaterThanOrEqual(chunks.length + Math.floor(entries / 256));
  });

  it('give states the digests of the vectors whatever the pause', async () => {
    await fc.assert(
      fc.asyncProperty(stateArb, async (state) => {
        const { ref, chunks } = chunksOfValue(state);
        const store = chunkStore();
        store.put(chunks);
        const tree = await readState(ref.hash, store.source, { pause: counting().pause });
        expect(tree.digest()).toBe(digestV2(state));
        // As JSON has it (-0 is 0 in canonical JSON).
        expect(tree.state).toEqual(JSON.parse(JSON.stringify(state)));
      }),
      { numRuns: 30 },
    );
  });
});

describe('eachChunk', () => {
  it('yields the chunks listChunks lists, one at a time, children first', () => {
    const [node] = build({ rows: records(3000), doc: 'y'.repeat(600_000) }, 0);
    const listed = listChunks(node);
    const one: string[] = [];
    for (const c of eachChunk(node)) one.push(c.hash);
    expect(one).toEqual(listed.map((c) => c.hash));
    expect(one).toEqual(chunkHashes(node));
  });
});

describe('jsonPieces', () => {
  const text = async (value: unknown, pause = counting().pause) => {
    let out = '';
    for await (const piece of jsonPieces(value, pause)) out += piece;
    return out;
  };

  it('writes what JSON.stringify writes, for any JSON value', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), stateArb, async (value, state) => {
        expect(await text(value)).toBe(JSON.stringify(value));
        expect(await text({ seq: 1, state, stateDigest: 'd' })).toBe(
          JSON.stringify({ seq: 1, state, stateDigest: 'd' }),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('writes long strings in slices, never splitting a surrogate pair', async () => {
    const pair = '🙂';
    for (const at of [65_535, 65_536, 65_537]) {
      const s = `${'a'.repeat(at)}${pair}${'"\\\n'.repeat(30_000)}${pair}`;
      expect(await text({ s })).toBe(JSON.stringify({ s }));
    }
    expect(await text('x'.repeat(200_000))).toBe(JSON.stringify('x'.repeat(200_000)));
  });

  it('asks pause every 256 values and between the slices of a long string', async () => {
    const spy = counting();
    await text({ rows: records(10_000) }, spy.pause);
    // 10,000 records of 2 members and a string each: about 30,000 values.
    expect(spy.calls()).toBeGreaterThanOrEqual(Math.floor(30_000 / 256));
    const long = counting();
    await text('z'.repeat(1_000_000), long.pause);
    expect(long.calls()).toBeGreaterThanOrEqual(15);
  });
});
