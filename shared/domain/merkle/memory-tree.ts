import { InvalidInputError } from '../errors.js';
import { HASH_BYTES } from '../hashing.js';
import { foldRange } from './frontier.js';
import type { HashSource } from './generate.js';
import { nodeHash } from './hash.js';
import { checkSize, type NodeId, rangeNodes } from './shape.js';

/** One level's hashes in one growable buffer (not an array of small buffers: 10^6 leaves stay cheap). */
class HashRow {
  #bytes = new Uint8Array(HASH_BYTES * 16);
  length = 0;

  push(hash: Uint8Array): void {
    if ((this.length + 1) * HASH_BYTES > this.#bytes.length) {
      const grown = new Uint8Array(this.#bytes.length * 2);
      grown.set(this.#bytes);
      this.#bytes = grown;
    }
    this.#bytes.set(hash, this.length * HASH_BYTES);
    this.length += 1;
  }

  /** A view, valid until the next push (copy it to keep it). */
  at(i: number): Uint8Array {
    return this.#bytes.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES);
  }
}

/**
 * The whole tree in memory: every perfect subtree's hash, level by level (2n hashes for n
 * leaves). A HashSource for tests and benchmarks, and for a client that holds a whole stream
 * (it can compute the root itself). Appends are amortised O(1) hashes.
 *
 * @example
 * ```ts
 * const tree = new MemoryTree();
 * for (const e of events) tree.append(eventLeafHash(e.hash));
 * const path = await inclusionProof(tree, 0, tree.size);
 * ```
 */
export class MemoryTree implements HashSource {
  readonly #levels: HashRow[] = [new HashRow()];

  get size(): number {
    return (this.#levels[0] as HashRow).length;
  }

  /** Appends a leaf hash (SHA-256(0x00 ‖ entry), see `leafHash`). */
  append(leaf: Uint8Array): void {
    if (leaf.length !== HASH_BYTES) throw new InvalidInputError('a leaf hash has 32 bytes');
    let level = 0;
    let hash = leaf;
    for (;;) {
      const row = this.#levels[level] as HashRow;
      row.push(hash);
      if (row.length % 2 === 1) return;
      // The row just completed a pair: its parent is a new perfect subtree one level up.
      hash = nodeHash(row.at(row.length - 2), row.at(row.length - 1));
      level += 1;
      if (this.#levels.length === level) this.#levels.push(new HashRow());
    }
  }

  /** The hash of a perfect subtree (a copy). */
  node(level: number, index: number): Uint8Array {
    const row = this.#levels[level];
    if (row === undefined || !Number.isSafeInteger(index) || index < 0 || index >= row.length) {
      throw new InvalidInputError(
        `no perfect subtree (${level}, ${index}) in a tree of ${this.size}`,
      );
    }
    return row.at(index).slice();
  }

  async nodeHashes(nodes: readonly NodeId[]): Promise<Uint8Array[]> {
    return nodes.map((n) => this.node(n.level, n.index));
  }

  /** MTH(D[0:size]), default the whole tree. */
  root(size = this.size): Uint8Array {
    checkSize(size, 'size');
    if (size > this.size) throw new InvalidInputError(`the tree has only ${this.size} leaves`);
    return foldRange(rangeNodes(0, size).map((n) => this.node(n.level, n.index)));
  }

  /** The frontier at `size` (default the whole tree), largest subtree first. */
  frontier(size = this.size): Uint8Array[] {
    checkSize(size, 'size');
    return rangeNodes(0, size).map((n) => this.node(n.level, n.index));
  }
}
