import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../../shared/domain/canonical.js';
import { STRING_PAGE, TAG, toHex, writer } from '../../shared/domain/state-v2/format.js';
import {
  chunkHashes,
  chunksOfValue,
  digestV2,
  eachChunk,
  listChunks,
  readState,
  readValue,
  verifyChunk,
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

describe('long strings', () => {
  /** Strings past a page (512 KiB), of pieces whose bytes straddle the page cuts in every way. */
  const longStringArb = fc
    .array(fc.constantFrom('a', 'é', '東', '🙂', '\n', '"', '\\', '\u0001', '\u001f', '/', ' '), {
      minLength: 1,
      maxLength: 40,
    })
    .chain((unit) =>
      fc
        .nat(7)
        .map(
          (skew) =>
            'x'.repeat(skew) + unit.join('').repeat(Math.ceil(700_000 / unit.join('').length)),
        ),
    );

  it('read back from their pages as built, page by page, checked canonical', async () => {
    await fc.assert(
      fc.asyncProperty(longStringArb, async (s) => {
        const { ref, chunks } = chunksOfValue({ s });
        for (const c of chunks) verifyChunk(c.bytes, c.hash);
        const store = chunkStore();
        store.put(chunks);
        const spy = counting();
        const read = await readValue(ref.hash, store.source, { pause: spy.pause });
        expect(read.node.value).toEqual({ s });
        expect(spy.calls()).toBeGreaterThanOrEqual(2);
      }),
      { numRuns: 12 },
    );
  });

  it('refuses a long string whose escapes are not canonical, even across a page cut', async () => {
    /** A string value stored as hand-made pages of `text` (its JSON), hashed as stored. */
    const stored = (text: string) => {
      const bytes = Buffer.from(text, 'utf8');
      // One writer at a time: they share a scratch buffer.
      const chunks: Array<{ hash: string; bytes: Uint8Array }> = [];
      const pages: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += STRING_PAGE) {
        const w = writer(TAG.stringPage);
        w.bytes(bytes.subarray(at, at + STRING_PAGE));
        pages.push(w.digest());
        chunks.push({ hash: toHex(w.digest()), bytes: w.copy() });
      }
      const root = writer(TAG.stringRoot);
      root.u64(bytes.length);
      for (const page of pages) root.bytes(page);
      chunks.push({ hash: toHex(root.digest()), bytes: root.copy() });
      const store = chunkStore();
      store.put(chunks);
      return { hash: toHex(root.digest()), store };
    };
    // Canonical: read back. `\u0061` for `a` (and a pair written as two escapes) is not
    // canonical: refused, whether the escape lies inside a page or across the cut.
    const ok = stored(`"${'a'.repeat(STRING_PAGE)}${'b'.repeat(1000)}"`);
    expect((await readValue(ok.hash, ok.store.source)).node.value).toHaveLength(STRING_PAGE + 1000);
    for (const at of [STRING_PAGE - 8, STRING_PAGE - 4, STRING_PAGE - 3, STRING_PAGE - 1, 1000]) {
      for (const spelled of ['\\u0061', '\\ud83d\\ude42']) {
        const text = `"${'a'.repeat(at - 1)}${spelled}${'b'.repeat(STRING_PAGE)}"`;
        const bad = stored(text);
        await expect(
          readValue(bad.hash, bad.store.source, { pause: () => undefined }),
        ).rejects.toThrow(/not canonical/);
      }
    }
  });
});

describe('eachChunk', () => {
  it('yields the chunks listChunks lists, one at a time, children first', () => {
    const doc = `${'y'.repeat(524_287)}🙂${'z\n'.repeat(300_000)}`;
    const [node] = build({ rows: records(3000), doc }, 0);
    const listed = listChunks(node);
    const one: string[] = [];
    for (const c of eachChunk(node)) {
      verifyChunk(c.bytes, c.hash);
      one.push(c.hash);
    }
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
