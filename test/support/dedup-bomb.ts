import { sha256 } from '../../shared/domain/hashing.js';
import {
  ARRAY_FANOUT,
  leafHashOfBytes,
  SLOT_HASH,
  SLOT_INLINE,
  TAG,
  VERSION,
} from '../../shared/domain/state-v2/format.js';
import type { Chunk, ChunkRef } from '../../shared/domain/state-v2/index.js';

/**
 * The dedup bomb of issue 21: an array of `count` copies of one small JSON value, written
 * as chunks by hand (never built in memory). Identical pages are one chunk, so a 64 MiB value
 * `[[{},{},...],...]` is 5 chunks of about 150 KB in all. The chunks are the canonical ones
 * (chunksOfValue of the same value gives the same bytes; test/unit checks it on a small one).
 */

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(Math.floor(n / 2 ** 32));
  b.writeUInt32BE(n >>> 0, 4);
  return b;
};

/** A page (or the root, with `count`) of an array over `slots` (inline leaves or hashes). */
const arrayChunk = (
  level: number,
  slots: Array<{ inline: Buffer } | { hash: Buffer }>,
  count?: number,
): { chunk: Chunk; hash: Buffer } => {
  const head = [
    Buffer.from([VERSION, count === undefined ? TAG.arrayPage : TAG.arrayRoot]),
    ...(count === undefined ? [] : [u64(count)]),
    Buffer.from([level]),
  ];
  const bytes: Buffer[] = [...head];
  const preimage: Buffer[] = [...head];
  for (const slot of slots) {
    if ('inline' in slot) {
      bytes.push(Buffer.from([SLOT_INLINE]), u32(slot.inline.length), slot.inline);
      preimage.push(leafHashOfBytes(slot.inline));
    } else {
      bytes.push(Buffer.from([SLOT_HASH]), slot.hash);
      preimage.push(slot.hash);
    }
  }
  const hash = sha256(Buffer.concat(preimage));
  return { chunk: { hash: hash.toString('hex'), bytes: Buffer.concat(bytes) }, hash };
};

/**
 * Chunks and ref of `[item, item, ...]` (`count` copies; `item` canonical JSON of at most
 * 1,024 bytes, a small leaf inlined in the pages).
 */
export const dedupBomb = (count: number, item: string): { ref: ChunkRef; chunks: Chunk[] } => {
  const inline = Buffer.from(item, 'utf8');
  const size = 2 + count * inline.length + (count - 1);
  // Each level: runs of identical pages; only a run's first page and a short last page differ.
  let entries: Array<{ slot: { inline: Buffer } | { hash: Buffer }; n: number }> = [
    { slot: { inline }, n: count },
  ];
  const chunks = new Map<string, Chunk>();
  let level = 0;
  for (;;) {
    const total = entries.reduce((s, e) => s + e.n, 0);
    if (total <= ARRAY_FANOUT) {
      const slots = entries.flatMap((e) => Array.from({ length: e.n }, () => e.slot));
      const root = arrayChunk(level, slots, count);
      chunks.set(root.chunk.hash, root.chunk);
      return { ref: { hash: root.chunk.hash, size }, chunks: [...chunks.values()] };
    }
    // Expand to one flat run list, cut every ARRAY_FANOUT entries (uniform runs dedupe).
    const next: typeof entries = [];
    let page: Array<{ inline: Buffer } | { hash: Buffer }> = [];
    const flush = () => {
      const { chunk, hash } = arrayChunk(level, page);
      chunks.set(chunk.hash, chunk);
      const last = next.at(-1);
      if (last && 'hash' in last.slot && last.slot.hash.equals(hash)) last.n++;
      else next.push({ slot: { hash }, n: 1 });
      page = [];
    };
    for (const e of entries) {
      let left = e.n;
      while (left > 0) {
        if (page.length === 0 && left >= ARRAY_FANOUT) {
          // Whole pages of this run: all the same chunk.
          const full = Math.floor(left / ARRAY_FANOUT);
          page = Array.from({ length: ARRAY_FANOUT }, () => e.slot);
          const { chunk, hash } = arrayChunk(level, page);
          chunks.set(chunk.hash, chunk);
          const last = next.at(-1);
          if (last && 'hash' in last.slot && last.slot.hash.equals(hash)) last.n += full;
          else next.push({ slot: { hash }, n: full });
          page = [];
          left -= full * ARRAY_FANOUT;
          continue;
        }
        page.push(e.slot);
        left--;
        if (page.length === ARRAY_FANOUT) flush();
      }
    }
    if (page.length > 0) flush();
    entries = next;
    level++;
  }
};

/** The bomb: ~64 MiB of `[[{},{},...],...]` (inner arrays of 340 `{}`, 1,019 bytes). */
export const SIXTY_FOUR_MIB_BOMB = (): { ref: ChunkRef; chunks: Chunk[] } => {
  const inner = `[${Array.from({ length: 340 }, () => '{}').join(',')}]`;
  const count = Math.floor((64 * 1024 * 1024 - 2) / (inner.length + 1));
  return dedupBomb(count, inner);
};
