import { pathToFileURL } from 'node:url';
import { sha256 } from '../shared/domain/hashing.js';
import {
  consistencyProof,
  consistencyProofJson,
  emptyEdge,
  extendFrontier,
  extendTiles,
  inclusionProof,
  inclusionProofJson,
  leafHash,
  MemoryTree,
  TileHashSource,
  type TileId,
  tilePath,
  tilesForConsistency,
  tilesForInclusion,
  verifyConsistency,
  verifyInclusion,
} from '../shared/domain/merkle/index.js';
import { HeadKeys, signTreeHead } from '../shared/domain/signed-head.js';
import { Ed25519Signer } from '../shared/ports/signer.js';
import { fmt, measure, measureAsync, printTable } from './harness.js';

/**
 * The verifiable ledger's pure parts, without storage: frontier upkeep per append, signing
 * and verifying a tree head, and generating / verifying proofs at 10^3, 10^5 and 10^6 leaves
 * from memory and from tiles (tiles held in memory: the tile count is the storage requests a
 * proof costs). `npx tsx bench/proofs-domain.ts`.
 */

const SIZES = [1_000, 100_000, 1_000_000];

const build = (n: number) => {
  const tree = new MemoryTree();
  const leaves: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const leaf = leafHash(sha256(`bench event ${i}`));
    leaves.push(leaf);
    tree.append(leaf);
  }
  const tiles = new Map<string, Uint8Array[]>();
  for (const t of extendTiles(emptyEdge(), leaves).tiles) tiles.set(tilePath(t.id), t.hashes);
  return { tree, leaves, tiles };
};

const readerOf = (tiles: Map<string, Uint8Array[]>) => ({
  async readTile(tile: TileId) {
    const hashes = tiles.get(tilePath(tile));
    return hashes === undefined ? undefined : Buffer.concat(hashes);
  },
});

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

export const runProofsDomainBench = async (): Promise<void> => {
  const signer = Ed25519Signer.generate();
  const keys = new HeadKeys({ keys: [signer.publicJwk] });
  const fields = {
    tenant: 'acme',
    streamId: 'run-1',
    treeBase: 0,
    treeSize: 1_000_000,
    rootHash: 'ab'.repeat(32),
    timestamp: 1_767_225_600_000,
  };
  const head = signTreeHead(fields, signer);
  const raw = measure('hash', () => sha256(fields.rootHash), { perBatch: 2_000 });
  const sign = measure('sign', () => signTreeHead(fields, signer), { perBatch: 500 });
  const verifyHead = measure('verify', () => keys.verify(head), { perBatch: 500 });
  printTable('Signed tree heads (Ed25519, in process)', [
    { operation: 'SHA-256 of 64 B (reference)', median: fmt(raw.medianUs), p90: fmt(raw.p90Us) },
    { operation: 'sign a tree head', median: fmt(sign.medianUs), p90: fmt(sign.p90Us) },
    {
      operation: 'verify a tree head',
      median: fmt(verifyHead.medianUs),
      p90: fmt(verifyHead.p90Us),
    },
    { operation: 'signed head JSON size', median: `${jsonBytes(head)} B`, p90: '' },
  ]);

  const rows: Array<Record<string, string | number>> = [];
  const sizes: Array<Record<string, string | number>> = [];
  for (const n of SIZES) {
    const started = process.hrtime.bigint();
    const { tree, leaves, tiles } = build(n);
    const buildMs = Number(process.hrtime.bigint() - started) / 1e6;
    const root = tree.root();
    const frontier = tree.frontier(n - 1_000);
    const batch = leaves.slice(n - 1_000);
    const append = measure('append', () => extendFrontier(frontier, n - 1_000, batch), {
      batches: 11,
      perBatch: 5,
      warmup: 5,
    });
    const leaf = Math.floor(n * 0.37);
    const from = Math.floor(n * 0.61) + 1;
    const incPath = await inclusionProof(tree, leaf, n);
    const conPath = await consistencyProof(tree, from, n);
    const oldRoot = tree.root(from);
    const genInc = await measureAsync('inc', () => inclusionProof(tree, leaf, n));
    const genCon = await measureAsync('con', () => consistencyProof(tree, from, n));
    const tileInc = await measureAsync('tinc', () =>
      inclusionProof(new TileHashSource(readerOf(tiles), n), leaf, n),
    );
    const tileCon = await measureAsync('tcon', () =>
      consistencyProof(new TileHashSource(readerOf(tiles), n), from, n),
    );
    const verInc = measure('vinc', () =>
      verifyInclusion(leaves[leaf] as Uint8Array, leaf, n, incPath, root),
    );
    const verCon = measure('vcon', () => verifyConsistency(from, n, conPath, oldRoot, root));
    rows.push({
      leaves: n.toLocaleString('en'),
      'frontier append / leaf': fmt(append.medianUs / 1_000),
      'inclusion: generate (memory)': fmt(genInc.medianUs),
      'inclusion: generate (tiles)': fmt(tileInc.medianUs),
      'inclusion: verify': fmt(verInc.medianUs),
      'consistency: generate (memory)': fmt(genCon.medianUs),
      'consistency: generate (tiles)': fmt(tileCon.medianUs),
      'consistency: verify': fmt(verCon.medianUs),
    });
    sizes.push({
      leaves: n.toLocaleString('en'),
      'inclusion path': `${incPath.length} hashes, ${jsonBytes(inclusionProofJson(leaf, n, incPath))} B JSON`,
      'inclusion tiles read': tilesForInclusion(leaf, n).length,
      'consistency path': `${conPath.length} hashes, ${jsonBytes(consistencyProofJson(from, n, conPath))} B JSON`,
      'consistency tiles read': tilesForConsistency(from, n).length,
      'tiles stored': tiles.size,
      'tree build (memory + tiles)': `${buildMs.toFixed(0)} ms`,
    });
  }
  printTable('Merkle proofs (median per call; tiles in memory, so tile rows are CPU only)', rows);
  printTable('Proof sizes and tile reads (one storage request per tile)', sizes);
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(`# Proofs (domain) — node ${process.version}, ${new Date().toISOString()}`);
  await runProofsDomainBench();
}
