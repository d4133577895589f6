import {
  ARRAY_FANOUT,
  OBJECT_FLAT_MAX,
  OBJECT_MAX_FANOUT,
  TAG,
  type Writer,
  writer,
} from './format.js';
import {
  type ContainerKind,
  type Entry,
  Kind,
  type Level,
  type ObjectEntry,
  type PageEntry,
  type SeqTree,
  type VNode,
} from './types.js';

/**
 * The paged tree over a container's children (docs/state-v2.md, "Containers"). A level is a
 * sequence of entries cut into pages; the pages of level L are the entries of level L + 1;
 * the first level with one page is the root. Where a page ends depends on the entries alone:
 *
 *   array   after every ARRAY_FANOUT entries (and at the end)
 *   object  after an entry whose key rank is > L, or after OBJECT_MAX_FANOUT entries since
 *           the last cut (and at the end); an object of at most OBJECT_FLAT_MAX members is
 *           one page
 *
 * so the tree is a function of the value, never of its history. An edit re-cuts only from the
 * page it lands in until a cut falls where an old cut was (after the edit): from there on the
 * old pages are the new ones. For arrays that is one page per level for appends and replaces,
 * and every page after the edit for a delete in the middle (items shift); for objects one page
 * per level, since key-rank cuts do not move.
 */

const hashOf = (kind: ContainerKind, level: number, e: Entry): Buffer =>
  level > 0
    ? (e as PageEntry).hash
    : kind === Kind.Array
      ? (e as VNode).hash
      : (e as ObjectEntry).child.hash;

const keyOf = (level: number, e: Entry): Buffer =>
  level > 0 ? ((e as PageEntry).key as Buffer) : (e as ObjectEntry).keyBytes;

const keyTextOf = (level: number, e: Entry): string =>
  level > 0 ? ((e as PageEntry).keyText as string) : (e as ObjectEntry).key;

const rankOf = (e: Entry): number => (e as ObjectEntry | PageEntry).rank;

const isCut = (kind: ContainerKind, level: number, e: Entry, count: number): boolean =>
  kind === Kind.Array ? count === ARRAY_FANOUT : rankOf(e) > level || count === OBJECT_MAX_FANOUT;

const writeEntries = (
  w: Writer,
  kind: ContainerKind,
  level: number,
  entries: Entry[],
  from: number,
  to: number,
): void => {
  for (let j = from; j < to; j++) {
    const e = entries[j] as Entry;
    if (kind === Kind.Object) {
      const key = keyOf(level, e);
      w.u32(key.length);
      w.bytes(key);
    }
    w.bytes(hashOf(kind, level, e));
  }
};

/** Hash of a page that is not the root: H(0x02 ‖ page tag ‖ u8 level ‖ entries). */
export const pageHash = (
  kind: ContainerKind,
  level: number,
  entries: Entry[],
  from: number,
  to: number,
): Buffer => {
  const w = writer(kind === Kind.Array ? TAG.arrayPage : TAG.objectPage);
  w.u8(level);
  writeEntries(w, kind, level, entries, from, to);
  return w.digest();
};

/** The root's hash input: 0x02 ‖ root tag ‖ u64 count ‖ u8 level ‖ entries of the top page. */
export const rootPreimage = (kind: ContainerKind, tree: SeqTree): Writer => {
  const top = tree.levels.length - 1;
  const entries = (tree.levels[top] as Level).entries;
  const w = writer(kind === Kind.Array ? TAG.arrayRoot : TAG.objectRoot);
  w.u64((tree.levels[0] as Level).entries.length);
  w.u8(top);
  writeEntries(w, kind, top, entries, 0, entries.length);
  return w;
};

export const rootHash = (kind: ContainerKind, tree: SeqTree): Buffer =>
  rootPreimage(kind, tree).digest();

/** Preimage of page `p` of `level` (not the root), for proofs. */
export const pagePreimage = (kind: ContainerKind, tree: SeqTree, level: number, p: number) => {
  const { entries, ends } = tree.levels[level] as Level;
  const w = writer(kind === Kind.Array ? TAG.arrayPage : TAG.objectPage);
  w.u8(level);
  writeEntries(w, kind, level, entries, p === 0 ? 0 : (ends[p - 1] as number), ends[p] as number);
  return w;
};

/** Index of the page of `ends` holding entry `index` (the first page ending after it). */
export const pageOf = (ends: number[], index: number): number => {
  let lo = 0;
  let hi = ends.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ends[mid] as number) > index) hi = mid;
    else lo = mid + 1;
  }
  return lo;
};

/** Index of the page of `ends` that ends exactly at `end`, or -1. */
const pageEndingAt = (ends: number[], end: number): number => {
  const p = pageOf(ends, end - 1);
  return ends[p] === end ? p : -1;
};

const summary = (
  kind: ContainerKind,
  level: number,
  entries: Entry[],
  from: number,
  to: number,
) => {
  const hash = pageHash(kind, level, entries, from, to);
  if (kind === Kind.Array) return { hash, rank: 0 } satisfies PageEntry;
  const first = entries[from] as Entry;
  return {
    hash,
    key: keyOf(level, first),
    keyText: keyTextOf(level, first),
    rank: rankOf(entries[to - 1] as Entry),
  } satisfies PageEntry;
};

/**
 * Re-cuts `level` after an edit. The window (min, max, d) says: entries [min, max) (new
 * indices) changed, every entry at or past `max` is an old entry moved by `d`, entries before
 * `min` are untouched. Answers the window of the level above, or undefined when this level
 * is now the root (one page).
 */
const rechunk = (
  kind: ContainerKind,
  tree: SeqTree,
  at: number,
  [min, max, d]: [number, number, number],
): [number, number, number] | undefined => {
  const level = tree.levels[at] as Level;
  const { entries } = level;
  const oldEnds = level.ends;
  const n = entries.length;
  const oldN = n - d;
  // Start at the old page holding the first edit (the last page, for an append): the cut
  // before it depends only on entries before the edit, so it still stands.
  const first = oldEnds.length === 0 ? 0 : pageOf(oldEnds, min >= oldN ? oldN - 1 : min);
  const start = first === 0 ? 0 : (oldEnds[first - 1] as number);
  const cuts: number[] = [];
  let last = oldEnds.length - 1;
  let count = 0;
  for (let j = start; j < n; j++) {
    count++;
    if (j < n - 1 && !isCut(kind, at, entries[j] as Entry, count)) continue;
    cuts.push(j + 1);
    count = 0;
    // Past the edit, a cut where an old one was: the rest is the old pages, moved by d.
    if (oldEnds.length > 0 && j >= max - 1 && j < n - 1) {
      const old = j - d + 1;
      const p = old === 0 ? -1 : pageEndingAt(oldEnds, old);
      if (old === 0 || p >= 0) {
        last = p;
        break;
      }
    }
  }
  const tail = oldEnds.slice(last + 1);
  for (let i = 0; i < tail.length; i++) tail[i] = (tail[i] as number) + d;
  level.ends = [...oldEnds.slice(0, first), ...cuts, ...tail];
  if (level.ends.length === 1) {
    tree.levels.length = at + 1;
    return undefined;
  }
  const above = tree.levels[at + 1];
  if (above === undefined) {
    // This level was the root: none of its pages has an entry above yet (not even an old
    // page kept after the re-cut).
    const ends = level.ends;
    const all = ends.map((end, i) =>
      summary(kind, at, entries, i === 0 ? 0 : (ends[i - 1] as number), end),
    );
    tree.levels.push({ entries: all, ends: [] });
    return [0, all.length, all.length];
  }
  const pages: PageEntry[] = cuts.map((end, i) =>
    summary(kind, at, entries, i === 0 ? start : (cuts[i - 1] as number), end),
  );
  above.entries.splice(first, last - first + 1, ...pages);
  return [first, first + pages.length, pages.length - (last - first + 1)];
};

/** Re-cuts every level from a level-0 window up to the root. */
export const settle = (
  kind: ContainerKind,
  tree: SeqTree,
  window: [number, number, number],
): void => {
  const level0 = tree.levels[0] as Level;
  if (kind === Kind.Object && level0.entries.length <= OBJECT_FLAT_MAX) {
    // Small objects are one page: a handful of members never pays for a level of pages.
    tree.levels.length = 1;
    level0.ends = [level0.entries.length];
    return;
  }
  let next: [number, number, number] | undefined = window;
  for (let at = 0; next !== undefined; at++) next = rechunk(kind, tree, at, next);
};

/** The tree over `entries` (at least one) built from nothing. */
export const buildTree = (kind: ContainerKind, entries: Entry[]): SeqTree => {
  const tree: SeqTree = { levels: [{ entries, ends: [] }] };
  settle(kind, tree, [0, entries.length, entries.length]);
  return tree;
};

/** Pages hashed between two calls of `pause` (a page is at most 128 entries). */
const PAGES_PER_PAUSE = 32;

/**
 * The same tree as `buildTree`, awaiting `pause` every few pages: a container of a million
 * entries is seconds of hashing, which the caller spreads over turns of the event loop.
 * What `settle` does for a window over every entry, level by level: cut the level, then hash
 * its pages into the entries of the level above, until a level is one page.
 */
export const buildTreePaced = async (
  kind: ContainerKind,
  entries: Entry[],
  pause: () => Promise<void> | undefined,
): Promise<SeqTree> => {
  const tree: SeqTree = { levels: [{ entries, ends: [] }] };
  if (kind === Kind.Object && entries.length <= OBJECT_FLAT_MAX) {
    (tree.levels[0] as Level).ends = [entries.length];
    return tree;
  }
  for (let at = 0; ; at++) {
    const level = tree.levels[at] as Level;
    const n = level.entries.length;
    const ends: number[] = [];
    let count = 0;
    for (let j = 0; j < n; j++) {
      count++;
      if (j < n - 1 && !isCut(kind, at, level.entries[j] as Entry, count)) continue;
      ends.push(j + 1);
      count = 0;
    }
    level.ends = ends;
    if (ends.length === 1) return tree;
    const above: PageEntry[] = [];
    for (let i = 0; i < ends.length; i++) {
      if (i % PAGES_PER_PAUSE === 0) for (let turn = pause(); turn; turn = pause()) await turn;
      const from = i === 0 ? 0 : (ends[i - 1] as number);
      above.push(summary(kind, at, level.entries, from, ends[i] as number));
    }
    tree.levels.push({ entries: above, ends: [] });
  }
};

/**
 * Folds an edit of level 0 into a pending window: entries [a, a + removed) became
 * `inserted` entries. Windows only grow, so one re-cut covers every edit of a batch.
 */
export const widen = (
  window: [number, number, number] | undefined,
  a: number,
  removed: number,
  inserted: number,
): [number, number, number] => {
  if (window === undefined) return [a, a + inserted, inserted - removed];
  const [min, max, d] = window;
  const moved = max >= a + removed ? max + inserted - removed : 0;
  return [Math.min(min, a), Math.max(a + inserted, moved), d + inserted - removed];
};
