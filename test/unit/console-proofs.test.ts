import { describe, expect, it } from 'vitest';
import {
  type ConsistencyProof,
  type InclusionProof,
  type SignedTreeHead,
  treeHeadPreimage,
  verifyConsistency,
  verifyInclusion,
  verifyTreeHead,
} from '../../console/src/proofs.js';
import { webCryptoHash } from '../../shared/domain/hash-port.js';
import merkle from '../vectors/merkle.json' with { type: 'json' };
import signed from '../vectors/signed-heads.json' with { type: 'json' };

/**
 * The console's in-browser proof checks (WebCrypto), against the project's vectors: every
 * inclusion proof of trees of 1..20 leaves, and the signed tree heads of the test key.
 */

const flip = (hex: string) => (hex[0] === '0' ? '1' : '0') + hex.slice(1);

describe('console proof checks', () => {
  it('accepts every inclusion proof of the vectors and refuses a wrong leaf or root', async () => {
    for (const proof of merkle.inclusion as InclusionProof[]) {
      const entry = merkle.entries[proof.leafIndex] as string;
      const root = merkle.roots[proof.treeSize] as string;

      expect(await verifyInclusion(webCryptoHash, entry, proof, root)).toBe(true);
      expect(await verifyInclusion(webCryptoHash, flip(entry), proof, root)).toBe(false);
      expect(await verifyInclusion(webCryptoHash, entry, proof, flip(root))).toBe(false);
    }
  });

  it('refuses a proof for a leaf index outside the tree or with a path too long', async () => {
    const proof = merkle.inclusion.find(
      (p) => p.treeSize === 7 && p.leafIndex === 3,
    ) as InclusionProof;
    const entry = merkle.entries[3] as string;
    const root = merkle.roots[7] as string;

    expect(await verifyInclusion(webCryptoHash, entry, { ...proof, leafIndex: 7 }, root)).toBe(
      false,
    );
    expect(
      await verifyInclusion(webCryptoHash, entry, { ...proof, path: [...proof.path, root] }, root),
    ).toBe(false);
  });

  it('encodes and verifies each signed head of the vectors, and refuses an edited one', async () => {
    const key = signed.testKey.publicJwk;
    for (const { head, preimage } of signed.heads as Array<{
      head: SignedTreeHead;
      preimage: string;
    }>) {
      expect(Buffer.from(treeHeadPreimage(head)).toString('hex')).toBe(preimage);
      expect(await verifyTreeHead(head, key)).toBe(true);
      expect(await verifyTreeHead({ ...head, treeSize: head.treeSize + 1 }, key)).toBe(false);
    }
  });

  it('accepts every consistency proof of the vectors and refuses a wrong root or path', async () => {
    for (const proof of merkle.consistency as ConsistencyProof[]) {
      const from = merkle.roots[proof.from] as string;
      const to = merkle.roots[proof.to] as string;

      expect(await verifyConsistency(webCryptoHash, proof, from, to)).toBe(true);
      if (proof.from > 0) {
        expect(await verifyConsistency(webCryptoHash, proof, flip(from), to)).toBe(false);
      }
      if (proof.from < proof.to && proof.from > 0) {
        expect(await verifyConsistency(webCryptoHash, proof, from, flip(to))).toBe(false);
        const [first = '', ...rest] = proof.path;
        expect(
          await verifyConsistency(
            webCryptoHash,
            { ...proof, path: [flip(first), ...rest] },
            from,
            to,
          ),
        ).toBe(false);
        expect(await verifyConsistency(webCryptoHash, { ...proof, path: [] }, from, to)).toBe(
          false,
        );
      }
    }
    // A shorter tree is never consistent with a longer one's root the other way round.
    const p = merkle.consistency.find((c) => c.from === 3 && c.to === 7) as ConsistencyProof;
    expect(
      await verifyConsistency(
        webCryptoHash,
        { ...p, from: 7, to: 3 },
        merkle.roots[7] as string,
        merkle.roots[3] as string,
      ),
    ).toBe(false);
  });
});
