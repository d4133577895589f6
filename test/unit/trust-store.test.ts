import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientVerificationError } from '../../shared/client/errors.js';
import {
  checkConsistency,
  TamperedHistoryError,
  verifyEventInclusion,
  verifyReceipt,
} from '../../shared/client/proofs.js';
import {
  MemoryTrustStore,
  TrustedHeads,
  type TrustKey,
  type TrustStore,
} from '../../shared/client/trust-store.js';
import {
  defaultTrustStorePath,
  FileTrustStore,
  TrustStoreError,
} from '../../shared/client/trust-store-file.js';
import { sha256Hex } from '../../shared/domain/hashing.js';
import {
  consistencyProof,
  consistencyProofJson,
  eventLeafHash,
  hashToHex,
  inclusionProof,
  inclusionProofJson,
  MemoryTree,
} from '../../shared/domain/merkle/index.js';
import { HeadKeys, type SignedTreeHead, signTreeHead } from '../../shared/domain/signed-head.js';
import { FakeSigner } from '../../shared/ports/signer.js';

/**
 * A stand-in for a server's stream: events with chain hashes, its tree, signed heads and
 * proofs. `rewrite` makes another history (what someone with write access to the bucket and
 * table could leave behind), so the client side can be shown to refuse it.
 */
class FakeStream {
  readonly hashes: string[] = [];
  tree = new MemoryTree();

  constructor(
    readonly tenant: string,
    readonly streamId: string,
    readonly signer = new FakeSigner('server'),
    readonly treeBase = 0,
    readonly history = 'original',
  ) {}

  append(n: number): this {
    for (let i = 0; i < n; i++) {
      const hash = sha256Hex(
        `${this.history}/${this.tenant}/${this.streamId}/${this.hashes.length}`,
      );
      this.hashes.push(hash);
      this.tree.append(eventLeafHash(hash));
    }
    return this;
  }

  head(size = this.tree.size, timestamp = 1_000 + size): SignedTreeHead {
    const { tenant, streamId, treeBase } = this;
    const rootHash = hashToHex(this.tree.root(size));
    return signTreeHead(
      { tenant, streamId, treeBase, treeSize: size, rootHash, timestamp },
      this.signer,
    );
  }

  async consistency(from: number, to: number) {
    return consistencyProofJson(from, to, await consistencyProof(this.tree, from, to));
  }

  async inclusion(seq: number, size = this.tree.size) {
    const leaf = seq - this.treeBase - 1;
    return inclusionProofJson(leaf, size, await inclusionProof(this.tree, leaf, size));
  }

  /** The same stream with history `history` for its first `keep` events, then `more` new ones. */
  rewritten(keep: number, more: number, history = 'forged'): FakeStream {
    const forged = new FakeStream(this.tenant, this.streamId, this.signer, this.treeBase, history);
    for (const h of this.hashes.slice(0, keep)) {
      forged.hashes.push(h);
      forged.tree.append(eventLeafHash(h));
    }
    return forged.append(more);
  }
}

const keysOf = (s: FakeStream) => new HeadKeys({ keys: [s.signer.publicJwk] });
const scope = { tenant: 'acme', streamId: 'run-1' };
const key: TrustKey = { baseUrl: 'http://hefesto.test', tenant: 'acme', stream: 'run-1' };

const tamperedWith = (fn: () => unknown): TamperedHistoryError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof TamperedHistoryError) return err;
    throw err;
  }
  throw new Error('expected a TamperedHistoryError');
};

describe('client proofs', () => {
  it('accept every proof of test/vectors/merkle.json through the client entry points', () => {
    const v = JSON.parse(
      readFileSync(new URL('../vectors/merkle.json', import.meta.url), 'utf8'),
    ) as {
      entries: string[];
      roots: string[];
      inclusion: Array<{ leafIndex: number; treeSize: number; path: string[] }>;
      consistency: Array<{ from: number; to: number; path: string[] }>;
    };
    const signer = new FakeSigner('vectors');
    const head = (treeSize: number) =>
      signTreeHead(
        { ...scope, treeBase: 0, treeSize, rootHash: v.roots[treeSize] as string, timestamp: 1 },
        signer,
      );
    const heads = v.roots.map((_, n) => head(n));
    for (const proof of v.inclusion) {
      const event = { seq: proof.leafIndex + 1, hash: v.entries[proof.leafIndex] as string };
      const signed = heads[proof.treeSize] as SignedTreeHead;
      expect(() => verifyEventInclusion(signed, event, proof)).not.toThrow();
      const other = { ...event, hash: v.entries[(proof.leafIndex + 1) % 20] as string };
      expect(() => verifyEventInclusion(signed, other, proof)).toThrow(ClientVerificationError);
    }
    for (const proof of v.consistency) {
      const [trusted, current] = [heads[proof.from], heads[proof.to]] as SignedTreeHead[];
      expect(() =>
        checkConsistency(trusted as SignedTreeHead, current as SignedTreeHead, proof),
      ).not.toThrow();
      if (proof.from > 0 && proof.from < proof.to) {
        const older = heads[proof.from - 1] as SignedTreeHead;
        expect(() => checkConsistency(older, current as SignedTreeHead, proof)).toThrow(
          ClientVerificationError,
        );
      }
    }
  });

  describe('checkConsistency', () => {
    it('accepts a head that extends the trusted one, with its consistency proof', async () => {
      const s = new FakeStream('acme', 'run-1').append(5);
      const trusted = s.head();
      s.append(4);
      expect(() => checkConsistency(trusted, s.head(), undefined)).toThrow(ClientVerificationError);
      const proof = await s.consistency(5, 9);
      expect(() => checkConsistency(trusted, s.head(), proof)).not.toThrow();
      expect(() => checkConsistency(trusted, trusted)).not.toThrow();
    });

    it('refuses a truncated stream: "truncated below a signed head"', () => {
      const s = new FakeStream('acme', 'run-1').append(5);
      const trusted = s.head();
      const err = tamperedWith(() => checkConsistency(trusted, s.head(3)));
      expect(err.reason).toBe('truncated');
      expect(err.message).toContain('truncated below a signed head');
      expect(err.code).toBe('ErrTamperedLedger');
      expect(err.firstBadSeq).toBe(4);
      expect([err.trustedSize, err.currentSize]).toEqual([5, 3]);
    });

    it('refuses a history rewritten below the trusted size: "history rewritten since tree size N"', async () => {
      const s = new FakeStream('acme', 'run-1').append(5);
      const trusted = s.head();
      // Truncated to 3, then 3 new appends: 1..6 again, but 4 and 5 are not what was signed.
      const forged = s.rewritten(3, 3);
      const proof = await forged.consistency(5, 6);
      const err = tamperedWith(() => checkConsistency(trusted, forged.head(), proof));
      expect(err.reason).toBe('rewritten');
      expect(err.message).toContain('history rewritten since tree size 5');
      // Same size, other root.
      const sameSize = s.rewritten(4, 1);
      expect(tamperedWith(() => checkConsistency(trusted, sameSize.head())).reason).toBe(
        'rewritten',
      );
      // A proof from the real history does not help the forged head either.
      s.append(1);
      const real = await s.consistency(5, 6);
      expect(tamperedWith(() => checkConsistency(trusted, forged.head(), real)).reason).toBe(
        'rewritten',
      );
    });

    it('refuses a tree rebuilt from another base seq', () => {
      const s = new FakeStream('acme', 'run-1').append(5);
      const rebased = new FakeStream('acme', 'run-1', s.signer, 2).append(5);
      expect(tamperedWith(() => checkConsistency(s.head(), rebased.head())).reason).toBe(
        'rewritten',
      );
    });

    it('refuses a proof for other sizes or of the wrong shape, without calling it a rewrite', async () => {
      const s = new FakeStream('acme', 'run-1').append(9);
      const trusted = s.head(5);
      for (const proof of [await s.consistency(4, 9), { from: 5, to: 9, path: ['zz'] }, 'nope']) {
        const err = (() => {
          try {
            checkConsistency(trusted, s.head(), proof);
          } catch (e) {
            return e;
          }
        })();
        expect(err).toBeInstanceOf(ClientVerificationError);
        expect(err).not.toBeInstanceOf(TamperedHistoryError);
      }
    });

    it('accepts any tree after a trusted empty one, and refuses an "empty" head with another root', async () => {
      const s = new FakeStream('acme', 'run-1');
      const empty = s.head();
      s.append(3);
      expect(() => checkConsistency(empty, s.head(), { from: 0, to: 3, path: [] })).not.toThrow();
      const bogus = signTreeHead({ ...empty, rootHash: hashToHex(s.tree.root()) }, s.signer);
      expect(() => checkConsistency(bogus, s.head(), { from: 0, to: 3, path: [] })).toThrow(
        TamperedHistoryError,
      );
    });
  });

  describe('verifyReceipt', () => {
    it('returns a head signed by a published key for the expected stream', () => {
      const s = new FakeStream('acme', 'run-1').append(2);
      expect(verifyReceipt(JSON.parse(JSON.stringify(s.head())), keysOf(s), scope)).toEqual(
        s.head(),
      );
    });

    it('refuses a bad signature, an unknown key and another stream or tenant', () => {
      const s = new FakeStream('acme', 'run-1').append(2);
      const head = s.head();
      expect(() => verifyReceipt({ ...head, treeSize: 3 }, keysOf(s), scope)).toThrow(/signature/);
      const stranger = new FakeStream('acme', 'run-1', new FakeSigner('stranger')).append(2);
      expect(() => verifyReceipt(stranger.head(), keysOf(s), scope)).toThrow(/unknown signing key/);
      const other = new FakeStream('acme', 'run-2', s.signer).append(2).head();
      expect(() => verifyReceipt(other, keysOf(s), scope)).toThrow(/acme\/run-2/);
      const tenant = new FakeStream('globex', 'run-1', s.signer).append(2).head();
      expect(() => verifyReceipt(tenant, keysOf(s), scope)).toThrow(ClientVerificationError);
    });
  });

  describe('verifyEventInclusion', () => {
    it('proves an event in the signed tree, also after pruning (treeBase)', async () => {
      for (const base of [0, 1_000]) {
        const s = new FakeStream('acme', 'run-1', new FakeSigner(), base).append(7);
        const head = s.head();
        const seq = base + 4;
        const event = { seq, hash: s.hashes[3] as string };
        expect(() => verifyEventInclusion(head, event, undefined)).toThrow(ClientVerificationError);
        const proof = await s.inclusion(seq);
        expect(() => verifyEventInclusion(head, event, proof)).not.toThrow();
        expect(() => verifyEventInclusion(head, { ...event, seq: seq + 1 }, proof)).toThrow(
          /not 4 of 7/,
        );
        const wrongHash = { ...event, hash: s.hashes[4] as string };
        expect(() => verifyEventInclusion(head, wrongHash, proof)).toThrow(
          /not in the signed tree/,
        );
        const older = await s.inclusion(seq, 5);
        expect(() => verifyEventInclusion(head, event, older)).toThrow(ClientVerificationError);
      }
    });
  });
});

const storeCases: Array<[string, (dir: string) => TrustStore]> = [
  ['memory', () => new MemoryTrustStore()],
  ['file', (dir) => new FileTrustStore(join(dir, 'nested', 'trusted-heads.json'))],
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'hefesto-trust-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe.each(storeCases)('%s trust store', (_name, make) => {
  it('keeps one head per base URL, tenant and stream', async () => {
    const store = make(dir);
    const a = new FakeStream('acme', 'run-1').append(3);
    const b = new FakeStream('acme', 'run-2').append(4);
    const c = new FakeStream('globex', 'run-1').append(5);
    await store.put(key, a.head());
    await store.put({ ...key, stream: 'run-2' }, b.head());
    await store.put({ ...key, tenant: 'globex' }, c.head());
    expect(await store.get(key)).toEqual(a.head());
    expect(await store.get({ ...key, baseUrl: 'http://hefesto.test/' })).toEqual(a.head());
    expect(await store.get({ ...key, stream: 'run-2' })).toEqual(b.head());
    expect(await store.get({ ...key, tenant: 'globex' })).toEqual(c.head());
    expect(await store.get({ ...key, baseUrl: 'http://other.test' })).toBeUndefined();
  });

  it('never moves back to a smaller tree', async () => {
    const store = make(dir);
    const s = new FakeStream('acme', 'run-1').append(9);
    await store.put(key, s.head(9));
    await store.put(key, s.head(4));
    expect((await store.get(key))?.treeSize).toBe(9);
    await Promise.all([3, 8, 12, 5].map(() => store.put(key, s.append(1).head())));
    expect((await store.get(key))?.treeSize).toBe(13);
  });
});

describe('file trust store', () => {
  const path = () => join(dir, 'trusted-heads.json');

  it('outlives the process: a restarted client still refuses the truncation', async () => {
    const s = new FakeStream('acme', 'run-1').append(5);
    await new TrustedHeads(new FileTrustStore(path())).advance(key, s.head(), () =>
      s.consistency(0, 5),
    );
    // Restart: a new store object over the same file, as a new process would have.
    const restarted = new TrustedHeads(new FileTrustStore(path()));
    await expect(restarted.advance(key, s.head(3), () => s.consistency(3, 5))).rejects.toThrow(
      /truncated below a signed head/,
    );
  });

  it('writes atomically with mode 0600 and leaves no temp file', async () => {
    const store = new FileTrustStore(path());
    const s = new FakeStream('acme', 'run-1');
    const readers: Promise<void>[] = [];
    for (let i = 0; i < 30; i++) {
      s.append(1);
      const writing = store.put(key, s.head());
      // Another reader of the file sees the old or the new content, never a torn one.
      readers.push(
        new FileTrustStore(path())
          .get(key)
          .then(() => undefined)
          .catch((err) => {
            if (!(err instanceof TrustStoreError)) throw err;
            throw new Error(`torn read: ${err.message}`);
          }),
      );
      await writing;
    }
    await Promise.all(readers);
    expect(statSync(path()).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['trusted-heads.json']);
    expect(JSON.parse(readFileSync(path(), 'utf8'))).toMatchObject({ version: 1 });
  });

  it('ignores a temp file left by a crash before the rename', async () => {
    const s = new FakeStream('acme', 'run-1').append(2);
    await new FileTrustStore(path()).put(key, s.head());
    writeFileSync(`${path()}.tmp-1-abc`, '{"version": 1, "entr');
    expect(await new FileTrustStore(path()).get(key)).toEqual(s.head());
  });

  it('fails closed on a damaged file instead of starting over', async () => {
    const s = new FakeStream('acme', 'run-1').append(2);
    await new FileTrustStore(path()).put(key, s.head());
    for (const damage of ['{"version": 1, "entr', '{"version": 2, "entries": []}', '[]']) {
      writeFileSync(path(), damage);
      await expect(new FileTrustStore(path()).get(key)).rejects.toThrow(TrustStoreError);
      await expect(new FileTrustStore(path()).put(key, s.head())).rejects.toThrow(TrustStoreError);
    }
    const doc = { version: 1, entries: [{ ...key, head: { ...s.head(), rootHash: 'x' } }] };
    writeFileSync(path(), JSON.stringify(doc));
    await expect(new FileTrustStore(path()).get(key)).rejects.toThrow(TrustStoreError);
  });

  it('defaults to $HEFESTO_TRUST_FILE, else ~/.hefesto/trusted-heads.json', () => {
    expect(defaultTrustStorePath({ HEFESTO_TRUST_FILE: '/x/t.json' }, '/home/u')).toBe('/x/t.json');
    expect(defaultTrustStorePath({}, '/home/u')).toBe('/home/u/.hefesto/trusted-heads.json');
  });
});

describe('TrustedHeads', () => {
  it('trusts the first head, then moves only along consistent heads', async () => {
    const trust = new TrustedHeads(new MemoryTrustStore());
    const s = new FakeStream('acme', 'run-1').append(5);
    const asked: Array<[number, number]> = [];
    const fetch = (from: number, to: number) => {
      asked.push([from, to]);
      return s.consistency(from, to);
    };
    await trust.advance(key, s.head(), fetch);
    expect(asked).toEqual([]);
    s.append(3);
    await trust.advance(key, s.head(), fetch);
    expect(asked).toEqual([[5, 8]]);
    expect((await trust.store.get(key))?.treeSize).toBe(8);
  });

  it('keeps the trusted head when a rewrite is refused, and refuses it again later', async () => {
    const trust = new TrustedHeads(new MemoryTrustStore());
    const s = new FakeStream('acme', 'run-1').append(5);
    await trust.advance(key, s.head(), () => s.consistency(0, 5));
    const forged = s.rewritten(3, 3);
    const attempt = () => trust.advance(key, forged.head(), (f, t) => forged.consistency(f, t));
    await expect(attempt()).rejects.toThrow(/history rewritten since tree size 5/);
    expect(await trust.store.get(key)).toEqual(s.head(5));
    await expect(attempt()).rejects.toThrow(TamperedHistoryError);
  });

  it('accepts a late receipt that is a prefix of the trusted tree, not one that is not', async () => {
    const trust = new TrustedHeads(new MemoryTrustStore());
    const s = new FakeStream('acme', 'run-1').append(8);
    await trust.advance(key, s.head(8), () => s.consistency(0, 8));
    const receipt = s.head(6);
    await trust.advance(key, receipt, (f, t) => s.consistency(f, t), { receipt: true });
    expect((await trust.store.get(key))?.treeSize).toBe(8);
    const forged = s.rewritten(4, 2).head();
    await expect(
      trust.advance(key, forged, (f, t) => s.consistency(f, t), { receipt: true }),
    ).rejects.toThrow(TamperedHistoryError);
    // Not a receipt: a current head smaller than the trusted one is a truncation.
    await expect(trust.advance(key, receipt, (f, t) => s.consistency(f, t))).rejects.toThrow(
      /truncated/,
    );
  });

  it('checks heads of one stream one at a time, so two forks in flight cannot both pass', async () => {
    const trust = new TrustedHeads(new MemoryTrustStore());
    const s = new FakeStream('acme', 'run-1').append(4);
    await trust.advance(key, s.head(), () => s.consistency(0, 4));
    const left = s.rewritten(4, 2, 'left');
    const right = s.rewritten(4, 3, 'right');
    const results = await Promise.allSettled([
      trust.advance(key, left.head(), (f, t) => left.consistency(f, t)),
      trust.advance(key, right.head(), (f, t) => right.consistency(f, t)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect((await trust.store.get(key))?.treeSize).toBe(6);
  });

  it('refuses a head for another stream than the key', async () => {
    const trust = new TrustedHeads(new MemoryTrustStore());
    const other = new FakeStream('acme', 'run-2').append(1).head();
    await expect(trust.advance(key, other, async () => undefined)).rejects.toThrow(
      /another stream/,
    );
  });
});
