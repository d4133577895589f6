import {
  baseDueKey,
  chunkRefsPk,
  refSk,
  snapshotIndexKey,
  snapshotKey,
} from '../chain/storage-keys.js';
import { canonicalJson } from '../domain/canonical.js';
import { TamperedLedgerError } from '../domain/errors.js';
import { sha256Hex } from '../domain/hashing.js';
import { encodeChunkSnapshot, type StateRootRef } from '../domain/snapshot.js';
import type { JsonObject } from '../domain/state.js';
import {
  boundedSource,
  describeRoot,
  eachChunk,
  eachChunkHash,
  MerkleState,
  readState,
  type VerifiedChunk,
} from '../domain/state-v2/index.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { RecordStore } from '../ports/record-store.js';
import type { ChunkStore, StoredKnowledge } from './chunk-store.js';
import { sealSnapshot } from './snapshot-seal.js';

/**
 * Snapshots v2 (docs/state-v2.md, "Snapshots v2 and chunk GC"): a base snapshot is the
 * state's chunks, shared by the tenant, plus one small root object under the stream.
 *
 * Writing a base at `seq` (each step idempotent; a crash between two leaves what the next
 * step or the compactor repairs):
 *   1. Put the reference record `{stream}#base#{seq}` naming the state's v2 digest, in a
 *      transaction conditional on the tenant's GC generation (chunk-store.ts `addRef`).
 *   2. Put the chunks that are new (put-if-absent), the root chunk last. New: not among the
 *      chunks this process saw stored under the same generation (the stream's last base).
 *   3. Put the root object (snapshot format 2, its header names the root chunk).
 *   4. Put the snapshot index record, conditional on the reference still existing (the GC
 *      reaps a reference whose root is missing after the grace: a writer that slow indexes
 *      nothing), then delete the `basedue` record.
 * Reading: the root object, then the chunks (bounded concurrency, through the tenant's chunk
 * cache, each verified against its hash), then the state's v1 digest against the index.
 */

export type SnapshotStep = 'ref-written' | 'chunks-written' | 'root-written';
export type SnapshotCrashHook = (step: SnapshotStep) => void;

export interface SnapshotWriteResult {
  key: string;
  root: StateRootRef;
  /** Bytes of the chunks this write put. */
  chunkBytes: number;
  chunksWritten: number;
}

const MAX_KNOWN = 256;

export class ChunkSnapshots {
  /** The chunks of each stream's last base (or fork origin) seen stored, by generation. */
  readonly #known = new Map<string, StoredKnowledge>();

  constructor(
    readonly chunks: ChunkStore,
    readonly objects: ObjectStore,
    readonly records: RecordStore,
    readonly crash?: SnapshotCrashHook,
  ) {}

  known(tenant: string, stream: string): StoredKnowledge | undefined {
    return this.#known.get(`${tenant}\u0000${stream}`);
  }

  /** The chunks of `tree` as stored under `gen` (a walk of the tree, taking turns). */
  async #learn(tenant: string, stream: string, gen: number, tree: MerkleState): Promise<void> {
    const key = `${tenant}\u0000${stream}`;
    this.#known.delete(key);
    if (gen % 2 === 1) return; // seen during a sweep: proves nothing after it
    const hashes = new Set<string>();
    const { pause } = this.chunks.pacer;
    for (const chunk of eachChunkHash(tree.root())) {
      for (let turn = pause(); turn; turn = pause()) await turn;
      hashes.add(chunk.hash);
    }
    this.#known.delete(key);
    this.#known.set(key, { gen, hashes });
    if (this.#known.size > MAX_KNOWN) {
      const oldest = this.#known.keys().next().value;
      if (oldest !== undefined) this.#known.delete(oldest);
    }
  }

  /**
   * Steps 1-2 for any holder (a base, a fork origin): the reference, then the new chunks.
   * `from` names the stream whose knowledge may be used to skip chunks (a fork: the source).
   */
  async storeState(
    tenant: string,
    holder: { stream: string; kind: 'base' | 'fork'; id: number },
    state: JsonObject | MerkleState,
    from: string = holder.stream,
    stored?: StoredKnowledge,
  ): Promise<{ tree: MerkleState; root: StateRootRef; chunkBytes: number; count: number }> {
    const tree = state instanceof MerkleState ? state : MerkleState.of(state);
    const root = describeRoot(tree) as StateRootRef;
    // `stored`: more chunks the caller saw stored (a checkpoint's values set by ref).
    const own = this.known(tenant, from);
    const known =
      stored && own?.gen === stored.gen
        ? { gen: own.gen, hashes: new Set([...own.hashes, ...stored.hashes]) }
        : (stored ?? own);
    const ref = { ...holder, digest: root.digest };
    let gen = known ? await this.chunks.addRef(tenant, ref, known.gen) : undefined;
    const hashes = gen === undefined ? undefined : known?.hashes;
    gen ??= (await this.chunks.addRef(tenant, ref)) as number;
    this.crash?.('ref-written');
    const chunks = eachChunk(tree.root(), hashes ? (h) => hashes.has(h) : undefined);
    const put = await this.chunks.putChunks(tenant, chunks);
    this.crash?.('chunks-written');
    await this.#learn(tenant, holder.stream, gen, tree);
    return { tree, root, chunkBytes: put.bytes, count: put.count };
  }

  /**
   * A fork's origin: its reference and the chunks not already stored (none when the state
   * is a base the forking process read), the root for the fork payload, and `confirm` for
   * after the fork event is appended (a reference the GC reaped meanwhile, as a dead writer's,
   * is put back and every chunk put again).
   */
  async writeForkOrigin(
    tenant: string,
    stream: string,
    origin: { source: string; state: JsonObject | MerkleState },
  ): Promise<{ fields: { root: StateRootRef }; confirm(): Promise<void> }> {
    const holder = { stream, kind: 'fork' as const, id: 0 };
    const stored = await this.storeState(tenant, holder, origin.state, origin.source);
    const confirm = async () => {
      if (await this.chunks.getRef(tenant, holder)) return;
      await this.storeState(tenant, holder, stored.tree, '\u0000none');
    };
    return { fields: { root: stored.root }, confirm };
  }

  /** A base snapshot v2 at `at.seq` (steps 1-4 above). */
  async writeBase(
    tenant: string,
    stream: string,
    at: {
      seq: number;
      hash: string;
      stateDigest: string;
      state: JsonObject | MerkleState;
      deltas?: number;
      /** The stream's digest version, kept on the index record (repair reads it there). */
      digestVersion?: 1 | 2;
      /** The last state-setting event at or before `seq` (state-binding.ts). */
      stateSeq?: number;
      /** Chunks known stored (their subtrees are not written again). */
      stored?: StoredKnowledge;
      /** The stream's content key when it is sealed at rest: the root object is sealed. */
      contentKey?: Uint8Array;
    },
  ): Promise<SnapshotWriteResult> {
    const holder = { stream, kind: 'base' as const, id: at.seq };
    const stored = await this.storeState(tenant, holder, at.state, stream, at.stored);
    const key = snapshotKey(tenant, stream, at.seq, at.stateDigest);
    const body = encodeChunkSnapshot({
      tenant,
      stream,
      seq: at.seq,
      hash: at.hash,
      stateDigest: at.stateDigest,
      root: stored.root,
      ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
    });
    await this.objects.putIfAbsent(key, sealSnapshot(body, { tenant, stream, key }, at.contentKey));
    this.crash?.('root-written');
    await this.records.transact([
      {
        kind: 'put',
        item: {
          ...snapshotIndexKey(tenant, stream, at.seq),
          seq: at.seq,
          hash: at.hash,
          stateDigest: at.stateDigest,
          objectKey: key,
          encoding: 'chunks',
          ...(at.deltas === undefined ? {} : { deltas: at.deltas }),
          ...(at.digestVersion === 2 ? { digestVersion: 2 } : {}),
          ...(at.stateSeq === undefined ? {} : { stateSeq: at.stateSeq }),
        },
      },
      {
        kind: 'check',
        key: { pk: chunkRefsPk(tenant), sk: refSk(stream, 'base', at.seq) },
        conditions: [{ op: 'exists' }],
      },
    ]);
    await this.records.delete(baseDueKey(tenant, stream, at.seq));
    return { key, root: stored.root, chunkBytes: stored.chunkBytes, chunksWritten: stored.count };
  }

  /**
   * The state a root names, verified chunk by chunk and then against the stream's digest:
   * digest v2 is the root's Merkle digest itself (the chunks' hashes chain to it); v1 is the
   * SHA-256 of the state's canonical JSON. `stream` learns the chunks as stored. `verified`:
   * chunks already fetched and verified (a measure of the same state), not read again.
   */
  async readRoot(
    tenant: string,
    stream: string,
    root: StateRootRef,
    expect: { seq: number; stateDigest: string; digestVersion?: 1 | 2 },
    verified?: Map<string, VerifiedChunk>,
  ): Promise<{ state: JsonObject; tree: MerkleState }> {
    const fetched = new Map<string, Uint8Array>();
    const gen = await this.chunks.generation(tenant);
    const source = boundedSource(this.chunks.source(tenant, fetched), this.chunks.concurrency);
    // Leaves need no canonical check: the state is checked whole against the stream's
    // verified digest right after, and the chunks' hashes and paging are checked anyway.
    const tree = await readState(root.digest, source, {
      seq: Math.max(1, expect.seq),
      canonical: false,
      pause: this.chunks.pacer.pause,
      ...(verified ? { verified } : {}),
    });
    const state = tree.state;
    const matches =
      expect.digestVersion === 2
        ? root.digest === expect.stateDigest
        : sha256Hex(canonicalJson(state)) === expect.stateDigest;
    if (tree.size !== root.size || !matches) {
      throw new TamperedLedgerError(
        Math.max(1, expect.seq),
        'snapshot chunks do not hold the state its digest names',
      );
    }
    this.chunks.remember(tenant, fetched);
    await this.#learn(tenant, stream, gen, tree);
    return { state, tree };
  }
}
