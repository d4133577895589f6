import type { HeadRecord } from '../chain/layout.js';
import { witnessKey } from '../chain/storage-keys.js';
import { TamperedLedgerError } from '../domain/errors.js';
import {
  completedNodes,
  eventLeafHash,
  extendFrontier,
  frontierFromHex,
  frontierRoot,
  frontierToHex,
  hashToHex,
} from '../domain/merkle/index.js';
import { type HeadSigner, type SignedTreeHead, signTreeHead } from '../domain/signed-head.js';
import type { Condition, JsonValue, TransactOp } from '../ports/record-store.js';

/**
 * The Merkle tree's part of an append's commit (docs/records-v2.md, "The commit transaction,
 * v2"; docs/proofs.md). Pure: the appender calls it before its one transaction and adds what
 * it returns to that transaction, so the tree costs no storage request of its own:
 *
 * - the head's `treeSize`/`frontier` move with `seq` (a stream whose head has no tree, written
 *   before trees existed, keeps none until the backfill gives it one: tree-tiles.ts);
 * - the receipt (the signed head after the batch) is signed here, in process, and stored on
 *   the head (`treeHead`: what the witness publishes, so the compactor needs no key) and with
 *   the idempotency record (so a retry answers the original receipt);
 * - the first commit after the witness published the stream puts its witness marker
 *   (`wit#{shard}`, one per stream) and sets `witPending`: one extra item per stream per
 *   witness run, not per append (witness.ts).
 *
 * - the segment's index record gets `treeNodes`: the hashes of the perfect subtrees of 16
 *   leaves or more that the batch completes (about one per 8 events, at most one per level
 *   more), so a proof on leaves the compactor has not tiled yet reads O(log n) of them
 *   instead of the segments (tree-source.ts): the tree's own tiles, written on commit, in
 *   the one record the commit writes anyway.
 *
 * The commit's head update carries conditions on what it read of these fields (no tree yet,
 * witPending or not): the backfill and the witness change them under the same seq, and a
 * commit that read them before must not write over them (the appender retries on the fresh
 * head).
 */

/**
 * The lowest level of the subtrees an index record stores (`treeNodes`): 16 leaves. Smaller
 * ones are hashed from the leaves (at most 15 of a proof's leaves on each side of a path).
 */
export const STORED_NODE_LEVEL = 4;

/** A stream's tree as its head holds it. */
export interface TreeState {
  treeBase: number;
  treeSize: number;
  frontier: Uint8Array[];
}

/**
 * The tree of a head, or undefined when it has none (a stream not backfilled yet). A head at
 * seq 0 (none yet, or a lease barrier) has the empty tree. A head whose tree does not fit
 * its seq was edited: ErrTamperedLedger.
 */
export const treeOf = (head: HeadRecord & { exists?: boolean }): TreeState | undefined => {
  if (head.treeSize === undefined) {
    if (head.seq === 0 && head.prunedSeq === undefined) {
      return { treeBase: 0, treeSize: 0, frontier: [] };
    }
    return undefined;
  }
  const treeBase = head.treeBase ?? 0;
  if (head.treeSize !== head.seq - treeBase) {
    throw new TamperedLedgerError(
      Math.max(1, head.seq),
      `the head's tree has ${head.treeSize} leaves, not seq ${head.seq} - treeBase ${treeBase}`,
    );
  }
  try {
    return {
      treeBase,
      treeSize: head.treeSize,
      frontier: frontierFromHex(head.frontier, head.treeSize),
    };
  } catch (err) {
    throw new TamperedLedgerError(Math.max(1, head.seq), 'the head frontier is malformed', {
      cause: err,
    });
  }
};

/** The tree after appending events with these chain hashes (hex), in seq order. */
export const extendTree = (tree: TreeState, hashes: readonly string[]): TreeState => ({
  treeBase: tree.treeBase,
  treeSize: tree.treeSize + hashes.length,
  frontier: extendFrontier(tree.frontier, tree.treeSize, hashes.map(eventLeafHash)),
});

export const treeRootHex = (tree: TreeState): string =>
  hashToHex(frontierRoot(tree.frontier, tree.treeSize));

/** The signed head of `tree` (signing is in process: ~43 µs). */
export const signTree = (
  signer: HeadSigner,
  at: { tenant: string; stream: string; now: number },
  tree: TreeState,
): SignedTreeHead =>
  signTreeHead(
    {
      tenant: at.tenant,
      streamId: at.stream,
      treeBase: tree.treeBase,
      treeSize: tree.treeSize,
      rootHash: treeRootHex(tree),
      timestamp: at.now,
    },
    signer,
  );

/** The head attributes of a tree. */
export const treeFields = (tree: TreeState): Record<string, JsonValue> => ({
  treeBase: tree.treeBase,
  treeSize: tree.treeSize,
  frontier: frontierToHex(tree.frontier),
});

export interface TreeCommit {
  /** Attributes the head update (or the new head) sets. */
  set: Record<string, JsonValue>;
  /** Attributes of the segment's index record (`treeNodes`). */
  index: Record<string, JsonValue>;
  /** Conditions the head update adds (what was read of the tree and witness fields). */
  conditions: Condition[];
  ops: TransactOp[];
  receipt?: SignedTreeHead;
}

/** What a commit of events with chain hashes `hashes` on `head` writes for the tree. */
export const treeCommit = (
  head: HeadRecord & { exists: boolean },
  at: { tenant: string; stream: string; now: number; hashes: readonly string[] },
  signer: HeadSigner | undefined,
): TreeCommit => {
  const before = treeOf(head);
  const conditions: Condition[] = [];
  if (head.exists) {
    conditions.push(
      head.treeSize === undefined
        ? { op: 'attrNotExists', attr: 'treeSize' }
        : { op: 'eq', attr: 'treeSize', value: head.treeSize },
      head.witPending
        ? { op: 'eq', attr: 'witPending', value: true }
        : { op: 'attrNotExists', attr: 'witPending' },
    );
  }
  if (before === undefined) return { set: {}, index: {}, conditions, ops: [] };
  const leaves = at.hashes.map(eventLeafHash);
  const tree: TreeState = {
    treeBase: before.treeBase,
    treeSize: before.treeSize + leaves.length,
    frontier: extendFrontier(before.frontier, before.treeSize, leaves),
  };
  const stored = completedNodes(before.frontier, before.treeSize, leaves, STORED_NODE_LEVEL);
  const index: Record<string, JsonValue> = {
    treeNodes: {
      base: before.treeBase,
      from: before.treeSize,
      to: tree.treeSize,
      hashes: stored.map(hashToHex).join(''),
    },
  };
  const receipt = signer && signTree(signer, at, tree);
  const set: Record<string, JsonValue> = { ...treeFields(tree) };
  if (receipt) set.treeHead = receipt as unknown as JsonValue;
  const ops: TransactOp[] = [];
  if (!head.witPending) {
    set.witPending = true;
    ops.push({
      kind: 'put',
      item: { ...witnessKey(at.tenant, at.stream), tenant: at.tenant, stream: at.stream },
    });
  }
  return { set, index, conditions, ops, ...(receipt ? { receipt } : {}) };
};
