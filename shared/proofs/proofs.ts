import type { HeadRecord } from '../chain/layout.js';
import type { Reader } from '../chain/reader.js';
import { TamperedObjectError } from '../chain/tampered.js';
import {
  InvalidFormatError,
  InvalidInputError,
  NotFoundError,
  PrunedError,
} from '../domain/errors.js';
import {
  type ConsistencyProofJson,
  consistencyProof,
  consistencyProofJson,
  frontierRoot,
  type InclusionProofJson,
  inclusionProof,
  inclusionProofJson,
  leafIndexOf,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
} from '../domain/merkle/index.js';
import type { JwkSet, SignedTreeHead } from '../domain/signed-head.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import type { KeyRing } from '../ports/signer.js';
import { signTree, type TreeState, treeOf } from './tree-commit.js';
import { segmentLeaves } from './tree-leaves.js';
import {
  indexNodeReader,
  objectTileReader,
  readTilesRecord,
  StreamHashSource,
} from './tree-source.js';

/**
 * Signed tree heads and proofs of one stream (docs/proofs.md): what the routes
 * `GET /v1/streams/{id}/tree-head`, `.../proofs/inclusion` and `.../proofs/consistency` and
 * `GET /v1/signing-keys` answer. Every request starts from the head checked against the chain
 * end, so a head edited to another seq is refused before its tree is used; proofs at the
 * head's size are checked against the head's own root before they are served (a tampered
 * tile is ErrTamperedLedger here rather than a proof the client refuses).
 *
 * Edges (docs/proofs.md): consistency from 0 or from = to is the empty path; inclusion of a
 * seq at or below the tree's base or the pruning point is ErrPruned (no event to show);
 * sizes past the current tree are bad input. A stream written before trees existed has none
 * until the compactor's backfill: ErrNotFound.
 */

export interface ProofServiceOptions {
  objects: ObjectStore;
  records: RecordStore;
  reader: Reader;
  clock: Clock;
  signing?: KeyRing;
  /** Leaves a proof may read from segments (tree-source.ts). Default PROOF_LEAF_BUDGET. */
  maxLeaves?: number;
  /** Retry-After of a proof past that budget. Default 30 s. */
  retryAfterMs?: number;
  /** Proofs computed at once; the others wait their turn. Default PROOF_CONCURRENCY. */
  maxConcurrent?: number;
}

/**
 * The stored tree (tiles, the index records' treeNodes) not hashing to the root the chain
 * commits: ErrTamperedLedger naming `tree` (docs/ledger-format.md, "Storage kinds").
 */
const treeTampered = (seq: number, message: string, cause?: unknown): TamperedObjectError =>
  new TamperedObjectError('tree', { firstBadSeq: seq, seq }, message, { cause });

/** A read of the stored tree: a tile or node missing or malformed is the tree tampered. */
const fromTree = async <T>(seq: number, read: () => Promise<T>): Promise<T> => {
  try {
    return await read();
  } catch (err) {
    if (err instanceof InvalidFormatError) {
      throw treeTampered(seq, `the stored tree is damaged: ${err.message}`, err);
    }
    throw err;
  }
};

/**
 * Proofs computed at once by one service. On the embedded stores every read is synchronous,
 * so a proof runs in a few stretches of the event loop, one per batch of hashes (~1-2 ms
 * each, StreamHashSource gives the loop a turn before each): with all 20 of 20 concurrent
 * proofs in every turn, /healthz waited for the whole lot (~300 ms on a loaded machine);
 * with 4, for at most 4 stretches. On S3/DynamoDB reads are I/O and a Lambda serves one
 * request at a time: the gate costs nothing there.
 */
export const PROOF_CONCURRENCY = 4;

interface Opened {
  head: HeadRecord;
  tree: TreeState;
  source: StreamHashSource;
}

export class ProofService {
  readonly #o: ProofServiceOptions;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(options: ProofServiceOptions) {
    this.#o = options;
  }

  /** Runs `work` once fewer than maxConcurrent proofs run, after a turn of the event loop. */
  async #turn<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= (this.#o.maxConcurrent ?? PROOF_CONCURRENCY)) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      await new Promise<void>((resolve) => setImmediate(resolve));
      return await work();
    } finally {
      // The slot passes to the next waiter as it is (running unchanged), else it is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }

  /** The published keys, current first (`GET /v1/signing-keys`). */
  jwks(): JwkSet {
    return this.#ring().jwks();
  }

  /** The signed head of the stream's tree now. */
  async treeHead(tenant: string, stream: string): Promise<SignedTreeHead> {
    const ring = this.#ring();
    const { tree } = await this.#turn(() => this.#open(tenant, stream));
    return signTree(ring.current, { tenant, stream, now: this.#o.clock.now() }, tree);
  }

  /** RFC 9162 inclusion proof of event `seq` in the tree of `treeSize` (default: now). */
  inclusion(
    tenant: string,
    stream: string,
    seq: number,
    treeSize?: number,
  ): Promise<InclusionProofJson> {
    return this.#turn(() => this.#inclusion(tenant, stream, seq, treeSize));
  }

  #inclusion(
    tenant: string,
    stream: string,
    seq: number,
    treeSize: number | undefined,
  ): Promise<InclusionProofJson> {
    return this.#o.reader.retrying(async () => {
      const { head, tree, source } = await this.#open(tenant, stream);
      const size = treeSize ?? tree.treeSize;
      if (size > tree.treeSize) {
        throw new InvalidInputError(`treeSize ${size} is past the tree's ${tree.treeSize} leaves`);
      }
      const floor = Math.max(tree.treeBase, head.prunedSeq ?? 0);
      if (seq <= floor) throw new PrunedError(stream, floor);
      const leafIndex = leafIndexOf(seq, tree.treeBase);
      if (leafIndex >= size) {
        throw new InvalidInputError(`seq ${seq} is not in the tree of ${size} leaves`);
      }
      const path = await fromTree(seq, () => inclusionProof(source, leafIndex, size));
      if (size === tree.treeSize) {
        const [leaf] = await fromTree(seq, () =>
          source.nodeHashes([{ level: 0, index: leafIndex }]),
        );
        const root = frontierRoot(tree.frontier, tree.treeSize);
        if (!leaf || !verifyInclusion(leaf, leafIndex, size, path, root)) {
          throw treeTampered(seq, "the stored tree does not match the head's root");
        }
      }
      return inclusionProofJson(leafIndex, size, path);
    });
  }

  /** RFC 9162 consistency proof from tree size `from` to `to` (default: now). */
  consistency(
    tenant: string,
    stream: string,
    from: number,
    to?: number,
  ): Promise<ConsistencyProofJson> {
    return this.#turn(() => this.#consistency(tenant, stream, from, to));
  }

  #consistency(
    tenant: string,
    stream: string,
    from: number,
    to: number | undefined,
  ): Promise<ConsistencyProofJson> {
    return this.#o.reader.retrying(async () => {
      const { tree, source } = await this.#open(tenant, stream);
      const size = to ?? tree.treeSize;
      if (size > tree.treeSize) {
        throw new InvalidInputError(`to ${size} is past the tree's ${tree.treeSize} leaves`);
      }
      if (from > size) throw new InvalidInputError(`from ${from} must not exceed to ${size}`);
      const first = tree.treeBase + 1;
      const path = await fromTree(first, () => consistencyProof(source, from, size));
      if (size === tree.treeSize && from > 0 && from < size) {
        const fromRoot = await fromTree(first, () => treeRoot(source, from));
        const root = frontierRoot(tree.frontier, tree.treeSize);
        if (!verifyConsistency(from, size, path, fromRoot, root)) {
          throw treeTampered(first, "the stored tree does not match the head's root");
        }
      }
      return consistencyProofJson(from, size, path);
    });
  }

  #ring(): KeyRing {
    // As for a stream without a tree: nothing signed to show (a client that trusted a signed
    // head of the stream before refuses that).
    if (!this.#o.signing) throw new NotFoundError('this server signs no tree heads');
    return this.#o.signing;
  }

  async #open(tenant: string, stream: string): Promise<Opened> {
    const { reader, records, objects } = this.#o;
    const head = await reader.checkedHead(tenant, stream);
    const tree = treeOf(head);
    if (!tree) {
      throw new NotFoundError(
        `stream ${stream} has no Merkle tree yet (written before trees; the compactor builds it)`,
      );
    }
    const tiles = await readTilesRecord(records, tenant, stream);
    // Tiles of another base belong to a tree this head no longer has: not used.
    const tiledSize =
      tiles && tiles.treeBase === tree.treeBase ? Math.min(tiles.size, tree.treeSize) : 0;
    const at = { tenant, stream, head, treeBase: tree.treeBase };
    const source = new StreamHashSource({
      tiles: objectTileReader(objects, tenant, stream),
      tiledSize,
      tree,
      leaves: (start, end) => segmentLeaves({ objects, records }, at, start, end),
      stored: indexNodeReader(records, { tenant, stream, treeBase: tree.treeBase }),
      maxLeaves: this.#o.maxLeaves,
      retryAfterMs: this.#o.retryAfterMs,
    });
    return { head, tree, source };
  }
}
