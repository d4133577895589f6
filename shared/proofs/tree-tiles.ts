import type { HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { headKey, tileKey, tilesKey } from '../chain/storage-keys.js';
import { ConflictError, PrunedError, TamperedLedgerError } from '../domain/errors.js';
import {
  edgeFromTiles,
  edgeRoot,
  emptyEdge,
  encodeTile,
  eventLeafHash,
  extendTiles,
  frontierRoot,
  frontierToHex,
  rangeNodes,
  type Tile,
  type TileEdge,
  TileHashSource,
} from '../domain/merkle/index.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore, TransactOp } from '../ports/record-store.js';
import { treeOf } from './tree-commit.js';
import { LeafSteps, pool } from './tree-leaves.js';
import { objectTileReader, readTilesRecord } from './tree-source.js';

/**
 * The compactor's tree step (docs/proofs.md, "Tiles"): writes the tiles of a stream's tree up
 * to its head, and gives a stream written before trees existed its tree (the backfill). Run in
 * a compactor visit, under its lease, before pruning (the leaves come from the segments).
 *
 *   1. Read the head (checked against the chain end) and the `tiles` record: tiles are stored
 *      for the first `size` leaves. The tree's base is the head's `treeBase`; for a head
 *      without a tree, the tiles record's base (a tree the repair dropped), else its pruning
 *      point (`treeBase = prunedSeq`, docs/proofs.md "Pruning").
 *   2. From the partial tiles at `size` (the tiles' edge) and the leaf hashes of the next
 *      `CHUNK` events (tree-leaves.ts: from the index records, and from the verified segments
 *      that hold more than one of them), compute the new tiles (`extendTiles`) and write each
 *      create-only, TILE_WRITE_CONCURRENCY at a time: the same bytes again is a retry; other
 *      bytes are tampering or a bug and stop the step (ErrTamperedLedger).
 *   3. Before the tiles record moves to the head's size, the tiles' root must equal the
 *      root of the head's frontier: a frontier that does not fit the events is refused.
 *   4. Move the tiles record (conditional on the size read and on the lease). Dies anywhere
 *      in 2 (some tiles written, some not) or before 4: the record still says `size`, so the
 *      next run computes the same tiles again, finds those written (same bytes: not counted
 *      as new) and writes the rest: resumable per chunk. The record moved by someone else
 *      meanwhile, or the lease lost: ConflictError, nothing recorded; the next run goes on
 *      from what the record says.
 *   5. Backfill only: set the head's treeBase/treeSize/frontier from the tiles, conditional on
 *      the head's seq (and on it having no tree); appends moved it meanwhile: again from 2.
 *
 * A pass stops between steps once `outOfTime` says so or after `maxLeaves` leaves (partial).
 */

/** Leaves per step (one tiles-record write each): resumable in pieces of this size. */
export const TILE_CHUNK = 4096;

/** Segment fetches in flight while the tree step reads leaves (tree-leaves.ts). */
export const TILE_READ_CONCURRENCY = 64;

/** Tile PUTs in flight at once (a step of 4,096 leaves writes 17; a larger `chunk`, more). */
export const TILE_WRITE_CONCURRENCY = 16;

/**
 * Leaves one pass tiles at most (then `partial`: the visit schedules its continuation), so a
 * stream with a long untiled history does not hold a compactor run that has other streams to
 * visit. 64 steps: 4.4 times a stream written at 1,000 events/s, with a pass a minute.
 */
export const TILE_PASS_LEAVES = 64 * TILE_CHUNK;

export interface TreeTilesDeps {
  objects: ObjectStore;
  records: RecordStore;
  reader: Reader;
}

export interface TreeTilesVisit {
  tenant: string;
  stream: string;
  /** The compactor's lease condition; every record write carries it. */
  fence?: TransactOp;
  /** Stop (and leave the rest for the next run) once this returns true. */
  outOfTime?: () => boolean;
  /** Leaves per step. Default TILE_CHUNK. */
  chunk?: number;
  /** Leaves this pass tiles at most, in whole steps (one at least). Default TILE_PASS_LEAVES. */
  maxLeaves?: number;
}

export interface TreeTilesResult {
  /** Leaves the stored tiles cover now. */
  size: number;
  tilesWritten: number;
  /** The head got its tree in this step. */
  backfilled: boolean;
  /** Work is left (out of time). */
  partial: boolean;
  /** The leaves past the stored tiles are pruned: no more tiles can be written. */
  stuck?: boolean;
}

const MAX_BACKFILL_ROUNDS = 8;

export const writeTreeTiles = async (
  deps: TreeTilesDeps,
  visit: TreeTilesVisit,
): Promise<TreeTilesResult> => {
  try {
    return await writeTiles(deps, visit);
  } catch (err) {
    // Leaves pruned before their tiles were written (a tree older than tiles): those tiles
    // cannot be made any more; proofs there answer ErrPruned, and the visit goes on.
    if (err instanceof PrunedError) {
      return { size: 0, tilesWritten: 0, backfilled: false, partial: false, stuck: true };
    }
    throw err;
  }
};

const writeTiles = async (deps: TreeTilesDeps, visit: TreeTilesVisit): Promise<TreeTilesResult> => {
  const result: TreeTilesResult = { size: 0, tilesWritten: 0, backfilled: false, partial: false };
  const chunk = visit.chunk ?? TILE_CHUNK;
  const maxLeaves = visit.maxLeaves ?? TILE_PASS_LEAVES;
  let tiled = 0;
  let edge: TileEdge | undefined;
  for (let round = 0; round < MAX_BACKFILL_ROUNDS; round++) {
    const head = await deps.reader.checkedHead(visit.tenant, visit.stream);
    const tree = treeOf(head);
    const record = await readTilesRecord(deps.records, visit.tenant, visit.stream);
    const treeBase = tree?.treeBase ?? record?.treeBase ?? head.prunedSeq ?? 0;
    const target = head.seq - treeBase;
    // Tiles of another base are of a tree this stream no longer has; never written over.
    let size = record && record.treeBase === treeBase ? record.size : 0;
    if (record && record.treeBase !== treeBase) {
      throw new TamperedLedgerError(
        treeBase + 1,
        `the stored tiles are of a tree after seq ${record.treeBase}, the head's after ${treeBase}`,
      );
    }
    if (size > target && tree) {
      throw new TamperedLedgerError(
        head.seq,
        `truncated below a tiled tree of ${size} leaves (the head has ${target})`,
      );
    }
    if (edge?.size !== size) edge = undefined;
    const steps = new LeafSteps(
      deps,
      { tenant: visit.tenant, stream: visit.stream, head, treeBase },
      TILE_READ_CONCURRENCY,
    );
    try {
      while (size < target) {
        const next = Math.min(target, size + chunk);
        // Between steps: out of time, or the next step would take the pass past maxLeaves.
        const full = tiled > 0 && tiled + (next - size) > maxLeaves;
        if (full || visit.outOfTime?.()) return { ...result, size, partial: true };
        tiled += next - size;
        edge ??=
          size === 0
            ? emptyEdge()
            : await edgeFromTiles(size, async (t) => {
                return (await deps.objects.get(tileKey(visit.tenant, visit.stream, t)))?.body;
              });
        const leaves = await steps.read(size, next);
        // The next step's leaves are read while this step's tiles and record are written.
        const after = Math.min(target, next + chunk);
        if (tiled + (after - next) <= maxLeaves) steps.readAhead(next, after);
        const extended = extendTiles(edge, leaves);
        if (next === target && tree) {
          // 3. The head's frontier must be the tree of the events it heads.
          const root = frontierRoot(tree.frontier, tree.treeSize);
          if (!sameBytes(edgeRoot(extended.edge), root)) {
            throw new TamperedLedgerError(
              head.seq,
              "the head's frontier is not the tree of the stream's events",
            );
          }
        }
        result.tilesWritten += await putTiles(deps.objects, visit, extended.tiles);
        await moveRecord(deps.records, visit, { treeBase, from: size, to: next, had: !!record });
        size = next;
        edge = extended.edge;
      }
    } finally {
      await steps.settle();
    }
    result.size = size;
    if (tree) return result;
    // 5. Backfill: the head gets its tree at the seq the tiles reached.
    if (await setHeadTree(deps, visit, head, treeBase, { tiled: size, size: target })) {
      return { ...result, backfilled: true };
    }
  }
  return { ...result, partial: true };
};

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/** 2. Each tile create-only; other bytes at its key stop the writer. Answers how many were new. */
const putTiles = async (
  objects: ObjectStore,
  visit: TreeTilesVisit,
  tiles: readonly Tile[],
): Promise<number> => {
  let written = 0;
  const puts = tiles.map((tile) => async () => {
    const key = tileKey(visit.tenant, visit.stream, tile.id);
    try {
      if ((await objects.putIfAbsent(key, encodeTile(tile.hashes))).created) written++;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      throw new TamperedLedgerError(1, `tile ${key} holds other hashes than the events'`, {
        cause: err,
      });
    }
  });
  await pool(puts, TILE_WRITE_CONCURRENCY);
  return written;
};

/** 4. The tiles record moves from `from` to `to` leaves (conditional on `from` and the lease). */
const moveRecord = async (
  records: RecordStore,
  visit: TreeTilesVisit,
  at: { treeBase: number; from: number; to: number; had: boolean },
): Promise<void> => {
  const key = tilesKey(visit.tenant, visit.stream);
  const ops: TransactOp[] = [
    {
      kind: 'put',
      item: { ...key, treeBase: at.treeBase, size: at.to },
      conditions:
        at.from === 0 && !at.had
          ? [{ op: 'notExists' }]
          : [{ op: 'eq', attr: 'size', value: at.from }],
    },
  ];
  if (visit.fence) ops.push(visit.fence);
  await records.transact(ops);
};

/**
 * 5. The head of a stream without a tree gets the tree of the tiles (`size` leaves after
 * `treeBase`), if it still heads exactly those events. False: appends moved it meanwhile.
 */
const setHeadTree = async (
  deps: TreeTilesDeps,
  visit: TreeTilesVisit,
  head: HeadRecord,
  treeBase: number,
  at: { tiled: number; size: number },
): Promise<boolean> => {
  const { size } = at;
  const reader = objectTileReader(deps.objects, visit.tenant, visit.stream);
  const source = new TileHashSource(reader, at.tiled);
  const nodes = rangeNodes(0, size);
  const hashes =
    size === 0 ? [] : await source.nodeHashes([...nodes, { level: 0, index: size - 1 }]);
  const frontier = hashes.slice(0, nodes.length);
  // The tiles' last leaf must be the head's event (tiles of a longer history than the head's
  // were written before the head was moved back: the backfill does not build on them).
  const last = hashes.at(-1);
  if (last && !sameBytes(last, eventLeafHash(head.hash))) {
    throw new TamperedLedgerError(head.seq, "the stored tiles do not end at the head's event");
  }
  const ops: TransactOp[] = [
    {
      kind: 'update',
      key: headKey(visit.tenant, visit.stream),
      update: { set: { treeBase, treeSize: size, frontier: frontierToHex(frontier) } },
      conditions: [
        { op: 'eq', attr: 'seq', value: head.seq },
        { op: 'eq', attr: 'hash', value: head.hash },
        { op: 'attrNotExists', attr: 'treeSize' },
      ],
    },
  ];
  if (visit.fence) ops.push(visit.fence);
  try {
    await deps.records.transact(ops);
    return true;
  } catch (err) {
    if (err instanceof ConflictError && (err.index ?? 0) === 0) return false;
    throw err;
  }
};
