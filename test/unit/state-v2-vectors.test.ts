import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../../shared/domain/canonical.js';
import type { JsonObject } from '../../shared/domain/state.js';
import {
  digestV2,
  listChunks,
  MerkleState,
  proveState,
  readState,
  type StateProof,
  verifyProof,
} from '../../shared/domain/state-v2/index.js';

/**
 * test/vectors/state-v2.json, the states and proofs every implementation of state digest v2
 * must agree on (the client SDK's tests read the same file). Checked against the domain code
 * and against a deliberately naive implementation of docs/state-v2.md written here from the
 * page alone: canonical JSON of every subtree, pages by slicing, levels by looping.
 */

interface Vectors {
  format: string;
  v: number;
  digests: Array<{ name: string; json?: string; state: JsonObject; digest: string }>;
  proofs: Array<{ name: string; state: JsonObject; path: string; proof: StateProof }>;
}

const vectors = JSON.parse(
  readFileSync(join(import.meta.dirname, '../vectors/state-v2.json'), 'utf8'),
) as Vectors;

// The naive implementation: no caches, no incremental anything.
const H = (...parts: Array<Uint8Array | number[]>) =>
  createHash('sha256')
    .update(Buffer.concat(parts.map((p) => Buffer.from(p))))
    .digest();
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const slice = <T>(xs: T[], n: number): T[][] =>
  Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));
const rank = (key: Buffer) => /^0*/.exec(H([2, 7], key).toString('hex'))?.[0].length ?? 0;

interface Entry {
  key: Buffer;
  hash: Buffer;
  rank: number;
}
const entryBytes = (es: Entry[]) => es.flatMap((e) => [u32(e.key.length), e.key, e.hash]);

/**
 * How a page of level >= 1 ranks (docs/state-v2.md: the rank of the last member below it, the
 * key it was cut after). `'last-entry-key'` is the other reading the page once allowed: the
 * rank of the key written in the page's last entry (the first member under that entry).
 */
type PageRank = 'last-member' | 'last-entry-key';

const naive = (v: JsonValue, pageRank: PageRank = 'last-member'): Buffer => {
  const jcs = Buffer.from(canonicalJson(v), 'utf8');
  const scalar = typeof v !== 'object' || v === null;
  if (jcs.length <= 1024 || (scalar && jcs.length <= 524288)) return H([2, 0], jcs);
  if (typeof v === 'string') {
    const pages = slice([...jcs], 524288).map((p) => H([2, 6], p));
    return H([2, 5], u64(jcs.length), ...pages);
  }
  if (Array.isArray(v)) {
    let level = v.map((item) => naive(item, pageRank));
    let L = 0;
    for (; level.length > 64; L++) level = slice(level, 64).map((p) => H([2, 3], [L], ...p));
    return H([2, 1], u64(v.length), [L], ...level);
  }
  const object = v as { [key: string]: JsonValue };
  let level: Entry[] = Object.keys(object)
    .sort()
    .map((k) => ({
      key: Buffer.from(k, 'utf8'),
      hash: naive(object[k] as JsonValue, pageRank),
      rank: rank(Buffer.from(k, 'utf8')),
    }));
  const m = level.length;
  if (m <= 32) return H([2, 2], u64(m), [0], ...entryBytes(level));
  for (let L = 0; ; L++) {
    const pages: Entry[][] = [];
    let page: Entry[] = [];
    for (const e of level) {
      page.push(e);
      if (e.rank > L || page.length === 128) {
        pages.push(page);
        page = [];
      }
    }
    if (page.length > 0) pages.push(page);
    if (pages.length === 1) return H([2, 2], u64(m), [L], ...entryBytes(level));
    level = pages.map((p) => ({
      key: (p[0] as Entry).key,
      hash: H([2, 4], [L], ...entryBytes(p)),
      rank: pageRank === 'last-member' ? (p.at(-1) as Entry).rank : rank((p.at(-1) as Entry).key),
    }));
  }
};

describe('state v2 test vectors', () => {
  it('is the v2 vector file', () => {
    expect(vectors.format).toBe('hefesto.state-v2-vectors');
    expect(vectors.v).toBe(2);
    expect(vectors.digests.length).toBeGreaterThanOrEqual(15);
    expect(vectors.proofs.length).toBeGreaterThanOrEqual(5);
  });

  it.each(vectors.digests.map((d) => [d.name, d] as const))('digest: %s', async (_, d) => {
    expect(digestV2(d.state)).toBe(d.digest);
    expect(MerkleState.of(d.state).digest()).toBe(d.digest);
    if (d.json !== undefined) expect(digestV2(JSON.parse(d.json) as JsonObject)).toBe(d.digest);
    // The same digest from the naive implementation of the page.
    expect(naive(d.state).toString('hex')).toBe(d.digest);
    // Built up op by op from {}, then read back from its chunks.
    const ms = MerkleState.empty();
    for (const [k, value] of Object.entries(d.state)) {
      ms.apply([{ op: 'set', path: `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, value }]);
    }
    expect(ms.digest()).toBe(d.digest);
    const chunks = new Map(listChunks(ms.root()).map((c) => [c.hash, c.bytes]));
    expect((await readState(d.digest, async (h) => chunks.get(h))).digest()).toBe(d.digest);
  });

  it.each(vectors.proofs.map((p) => [p.name, p] as const))('proof: %s', (_, p) => {
    const digest = naive(p.state).toString('hex');
    expect(p.proof.digest).toBe(digest);
    expect(verifyProof(p.proof, digest)).toEqual({ ok: true, value: p.proof.value });
    const again = proveState(MerkleState.of(p.state), p.path);
    expect(canonicalJson(again as unknown as JsonValue)).toBe(
      canonicalJson(p.proof as unknown as JsonValue),
    );
    // The first node of a proof is the root's hash input (none when the path is the root).
    if (p.proof.nodes.length > 0) {
      expect(H(Buffer.from(p.proof.nodes[0] as string, 'base64')).toString('hex')).toBe(digest);
    }
  });

  it('has an object whose root is at level 3 or more, where the two readings of a page rank differ', () => {
    const deep = vectors.digests.filter((d) => {
      const map = d.state.map;
      if (typeof map !== 'object' || map === null || Array.isArray(map)) return false;
      const chunks = listChunks(MerkleState.of({ map }).root());
      const root = chunks.at(-2)?.bytes; // the map's root, just before the state's
      return root?.[1] === 0x02 && (root[10] ?? 0) >= 3;
    });

    expect(deep.map((d) => d.name)).toEqual([
      'object with its root at level 4: the keys k0…k15999 of rank ≥ 1',
    ]);
    for (const d of deep) {
      expect(naive(d.state, 'last-member').toString('hex')).toBe(d.digest);
      expect(naive(d.state, 'last-entry-key').toString('hex')).not.toBe(d.digest);
    }
    // Every other vector passes under both readings: only this one tells them apart.
    const others = vectors.digests.filter((d) => !deep.includes(d));
    for (const d of others) expect(naive(d.state, 'last-entry-key').toString('hex')).toBe(d.digest);
  });

  it('names the worked example of docs/state-v2.md', () => {
    const example = vectors.digests.find((d) => d.name.startsWith('worked example'));
    expect(example?.digest).toBe(
      'e6b7dbde877e4acfe5826fb8e5f3ee1fc86690205709098f9f444501678dfb7e',
    );
    expect(digestV2({})).toBe('1a87fbe67bab9960f0447bc9010950bd0140eb0d4fcc65e4c8e25b139d9bf327');
  });
});
