import type { JsonValue } from '../canonical.js';
import { checkBudget, countNodes, type Extent, type WorkBudget } from './budget.js';
import type { ParsedChunk, Slot } from './chunk-parse.js';
import { MAX_DEPTH, TAG, toHex } from './format.js';
import { bad, type ChunkSource, contextOf, fetchChunk, type ReadOptions, utf8 } from './source.js';

/**
 * The logical extent (budget.ts) of the value stored under a hash, from its chunks, before
 * any of it is built: each distinct chunk is fetched, verified and counted once, and a chunk
 * named twice counts twice without being read again. A value whose identical pages make a
 * few chunks name millions of nodes is measured in as many steps as it has distinct chunks,
 * and refused as soon as one subtree alone is over the budget.
 *
 * The count is exact for a canonical tree; the full read (read.ts) still checks everything
 * that makes the tree canonical, so a measure that passes a malformed tree only lets the
 * read refuse it.
 */

export interface MeasureOptions extends ReadOptions {
  budget: WorkBudget;
  /** What the caller already holds (the state the value goes into). */
  held?: Extent;
  /** For the message: what is measured ("op 3's ref"). */
  what: string;
  /** Called for a chunk that is not stored, before the default (tampering). */
  missing?: (hash: string) => never;
}

type Counted = Extent & { count: number };

const isContainerJson = (first: number | undefined) => first === 0x5b || first === 0x7b; // [ {

/** The extent of a leaf's canonical JSON (a container is parsed to count its values). */
const leafExtent = (jcs: Uint8Array): Extent => {
  if (!isContainerJson(jcs[0])) return { nodes: 1, bytes: jcs.length };
  let value: JsonValue = null;
  try {
    value = JSON.parse(utf8.decode(jcs)) as JsonValue;
  } catch {
    bad('a leaf is not JSON');
  }
  return { nodes: countNodes(value), bytes: jcs.length };
};

export const measureValue = async (
  hash: string,
  source: ChunkSource,
  options: MeasureOptions,
): Promise<Extent> => {
  const { missing } = options;
  const checked: ChunkSource = missing ? async (h) => (await source(h)) ?? missing(h) : source;
  const ctx = contextOf(checked, options);
  const held = options.held ?? { nodes: 0, bytes: 0 };
  const memo = new Map<string, Promise<Counted>>();
  const check = (e: Extent): void =>
    checkBudget(
      { nodes: held.nodes + e.nodes, bytes: held.bytes + e.bytes },
      options.budget,
      options.what,
    );

  const fetch = async (h: string) => (await fetchChunk(ctx, h)).parsed;

  const once = (key: string, compute: () => Promise<Counted>): Promise<Counted> => {
    let p = memo.get(key);
    if (!p) {
      p = compute().then((c) => {
        check(c);
        return c;
      });
      memo.set(key, p);
    }
    return p;
  };

  const slotsExtent = async (
    parsed: Extract<ParsedChunk, { slots: Slot[] }>,
    pageTag: number,
    depth: number,
  ): Promise<Counted> => {
    const object = pageTag === TAG.objectPage;
    const parts = await Promise.all(
      parsed.slots.map(async (slot): Promise<Counted> => {
        if (parsed.level > 0) return page(toHex(slot.hash), pageTag, parsed.level - 1, depth);
        const keyBytes = object ? keySize(slot.key) + 1 : 0;
        const child =
          slot.inline !== undefined
            ? leafExtent(slot.inline)
            : await node(toHex(slot.hash), depth + 1);
        return { nodes: child.nodes, bytes: child.bytes + keyBytes, count: 1 };
      }),
    );
    const sum: Counted = { nodes: 0, bytes: 0, count: 0 };
    for (const p of parts) {
      sum.nodes += p.nodes;
      sum.bytes += p.bytes;
      sum.count += p.count;
    }
    return sum;
  };

  const page = (h: string, pageTag: number, level: number, depth: number): Promise<Counted> =>
    once(`p${depth}:${h}`, async () => {
      const parsed = await fetch(h);
      if (parsed.tag !== pageTag || !('slots' in parsed) || parsed.level !== level) {
        bad('a page is out of place');
      }
      return slotsExtent(parsed as Extract<ParsedChunk, { slots: Slot[] }>, pageTag, depth);
    });

  const node = (h: string, depth: number): Promise<Counted> =>
    once(`n${depth}:${h}`, async () => {
      if (depth > MAX_DEPTH) bad(`the state nests deeper than ${MAX_DEPTH}`);
      const parsed = await fetch(h);
      if (parsed.tag === TAG.leaf) return { ...leafExtent(parsed.jcs), count: 1 };
      if (parsed.tag === TAG.stringRoot) return { nodes: 1, bytes: parsed.size, count: 1 };
      if (parsed.tag !== TAG.arrayRoot && parsed.tag !== TAG.objectRoot) {
        return bad('a page stands where a value should');
      }
      const pageTag = parsed.tag === TAG.arrayRoot ? TAG.arrayPage : TAG.objectPage;
      const inner = await slotsExtent(parsed, pageTag, depth);
      if (inner.count !== parsed.count) bad('a container holds another count of entries');
      return {
        nodes: 1 + inner.nodes,
        bytes: 2 + inner.bytes + Math.max(0, inner.count - 1),
        count: 1,
      };
    });

  const { nodes, bytes } = await node(hash, 0);
  return { nodes, bytes };
};

/** Bytes of an object key's canonical JSON (quotes and escapes). */
const keySize = (key: Uint8Array | undefined): number => {
  let text = '';
  try {
    text = utf8.decode(key ?? new Uint8Array(0));
  } catch {
    bad('a key is not UTF-8');
  }
  return Buffer.byteLength(JSON.stringify(text), 'utf8');
};
