import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidFormatError, InvalidInputError } from '../../shared/domain/errors.js';
import { EMPTY_ROOT, hashToHex } from '../../shared/domain/merkle/index.js';
import {
  HeadKeys,
  jwkThumbprint,
  parseJwks,
  parseSignedTreeHead,
  type SignedTreeHead,
  signTreeHead,
  type TreeHeadFields,
  treeHeadPreimage,
  verifySignedTreeHead,
} from '../../shared/domain/signed-head.js';
import { Ed25519Signer, FakeSigner, KeyRing } from '../../shared/ports/signer.js';

/**
 * test/vectors/signed-heads.json: signed tree heads under a fixed Ed25519 key. The key is
 * RFC 8032 section 7.1 TEST 1, public test data: a TEST KEY, never to sign anything real.
 * `HEFESTO_WRITE_VECTORS=1` regenerates the file (Ed25519 is deterministic: it must not change).
 */

const VECTORS = join(dirname(fileURLToPath(import.meta.url)), '../vectors/signed-heads.json');
const SEED = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const PUBLIC = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const merkle = JSON.parse(readFileSync(join(dirname(VECTORS), 'merkle.json'), 'utf8')) as {
  roots: string[];
};

const testKey = () => Ed25519Signer.fromSeed(Buffer.from(SEED, 'hex'));

const FIELDS: TreeHeadFields[] = [
  {
    tenant: 'acme',
    streamId: 'run-1',
    treeBase: 0,
    treeSize: 0,
    rootHash: hashToHex(EMPTY_ROOT),
    timestamp: 1_767_225_600_000,
  },
  {
    tenant: 'acme',
    streamId: 'run-1',
    treeBase: 0,
    treeSize: 5,
    rootHash: merkle.roots[5] as string,
    timestamp: 1_767_225_601_000,
  },
  {
    tenant: 'acme',
    streamId: 'run-2',
    treeBase: 0,
    treeSize: 5,
    rootHash: merkle.roots[5] as string,
    timestamp: 1_767_225_601_000,
  },
  {
    tenant: 'globex',
    streamId: 'run-1',
    treeBase: 0,
    treeSize: 20,
    rootHash: merkle.roots[20] as string,
    timestamp: 1_767_225_602_000,
  },
  {
    tenant: 'acme',
    streamId: 'pruned',
    treeBase: 1_000,
    treeSize: 16,
    rootHash: merkle.roots[16] as string,
    timestamp: 9_007_199_254_740_991,
  },
];

/** The preimage written out by hand from docs/proofs.md, sharing no code with the implementation. */
const naivePreimage = (h: TreeHeadFields & { keyId: string; alg: string }): Buffer => {
  const lp = (s: string) => {
    const b = Buffer.from(s, 'utf8');
    const n = Buffer.alloc(4);
    n.writeUInt32BE(b.length);
    return Buffer.concat([n, b]);
  };
  const u64 = (x: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(x));
    return b;
  };
  return Buffer.concat([
    lp('hefesto/tree-head/v1'),
    lp(h.tenant),
    lp(h.streamId),
    u64(h.treeBase),
    u64(h.treeSize),
    Buffer.from(h.rootHash, 'hex'),
    u64(h.timestamp),
    lp(h.keyId),
    lp(h.alg),
  ]);
};

if (process.env.HEFESTO_WRITE_VECTORS === '1') {
  const signer = testKey();
  const doc = {
    description:
      'Signed tree heads (docs/proofs.md). preimage = lp("hefesto/tree-head/v1") || lp(tenant) || lp(streamId) || u64 treeBase || u64 treeSize || rootHash (32 bytes) || u64 timestamp || lp(keyId) || lp(alg); lp = u32 big-endian byte length || UTF-8; u64 big-endian; signature = Ed25519(preimage), base64url. rootHash values are roots from merkle.json.',
    testKey: {
      warning:
        'TEST KEY: RFC 8032 section 7.1 TEST 1. Public knowledge; never use it to sign anything real.',
      seed: SEED,
      publicKey: PUBLIC,
      privatePkcs8Pem: signer.exportPkcs8Pem(),
      publicJwk: signer.publicJwk,
    },
    heads: FIELDS.map((f) => {
      const head = signTreeHead(f, signer);
      return { head, preimage: Buffer.from(treeHeadPreimage(head)).toString('hex') };
    }),
  };
  writeFileSync(VECTORS, `${JSON.stringify(doc, null, 2)}\n`);
}

const vectors = JSON.parse(readFileSync(VECTORS, 'utf8')) as {
  testKey: { seed: string; publicKey: string; privatePkcs8Pem: string; publicJwk: unknown };
  heads: Array<{ head: SignedTreeHead; preimage: string }>;
};
const JWKS = { keys: [vectors.testKey.publicJwk] };

const tamper = (head: SignedTreeHead): SignedTreeHead[] => [
  { ...head, tenant: `${head.tenant}x` },
  { ...head, streamId: `${head.streamId}x` },
  { ...head, treeBase: head.treeBase + 1 },
  { ...head, treeSize: head.treeSize + 1 },
  { ...head, rootHash: `${head.rootHash[0] === '0' ? '1' : '0'}${head.rootHash.slice(1)}` },
  { ...head, timestamp: head.timestamp - 1 },
];

describe('signed tree heads', () => {
  describe('test vectors', () => {
    it('use the RFC 8032 TEST 1 key: its public key and its signature of the empty message', () => {
      const signer = Ed25519Signer.fromPem(vectors.testKey.privatePkcs8Pem);
      expect(Buffer.from(signer.publicJwk.x, 'base64url').toString('hex')).toBe(PUBLIC);
      expect(vectors.testKey.seed).toBe(SEED);
      expect(Buffer.from(signer.sign(new Uint8Array(0))).toString('hex')).toBe(
        'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
      );
      expect(signer.keyId).toBe(jwkThumbprint(signer.publicJwk.x));
      expect(vectors.testKey.publicJwk).toEqual(signer.publicJwk);
    });

    it('have the documented preimage, re-sign to the same signature, and verify', () => {
      const signer = testKey();
      expect(vectors.heads.map((v) => v.head.rootHash)).toContain(hashToHex(EMPTY_ROOT));
      for (const { head, preimage } of vectors.heads) {
        expect(naivePreimage(head).toString('hex')).toBe(preimage);
        expect(Buffer.from(treeHeadPreimage(head)).toString('hex')).toBe(preimage);
        const { signature, keyId, alg, ...fields } = head;
        expect(signTreeHead(fields, signer)).toEqual(head);
        expect(keyId).toBe(signer.keyId);
        expect(alg).toBe('EdDSA');
        expect(verifySignedTreeHead(head, JWKS)).toMatchObject({ ok: true });
        // An independent check with node:crypto alone.
        const pub = createPublicKey({ key: vectors.testKey.publicJwk as never, format: 'jwk' });
        expect(
          verify(null, Buffer.from(preimage, 'hex'), pub, Buffer.from(signature, 'base64url')),
        ).toBe(true);
      }
    });

    it('stop verifying when any signed field changes, and when the signature does', () => {
      const keys = new HeadKeys(JWKS);
      for (const { head } of vectors.heads) {
        for (const bad of tamper(head))
          expect(keys.verify(bad)).toEqual({ ok: false, reason: 'bad tree head signature' });
        const sig = Buffer.from(head.signature, 'base64url');
        sig[10] = (sig[10] as number) ^ 1;
        expect(keys.verify({ ...head, signature: sig.toString('base64url') }).ok).toBe(false);
      }
    });
  });

  describe('parsing', () => {
    const { head } = vectors.heads[0] as { head: SignedTreeHead };

    it('refuses heads of the wrong shape with the reason, never throwing from verify', () => {
      const keys = new HeadKeys(JWKS);
      for (const bad of [
        null,
        [],
        { ...head, treeSize: -1 },
        { ...head, treeSize: 1.5 },
        { ...head, treeSize: '5' },
        { ...head, timestamp: 2 ** 53 },
        { ...head, rootHash: head.rootHash.toUpperCase() },
        { ...head, tenant: '' },
        { ...head, alg: 'ES256' },
        { ...head, alg: 'none' },
        { ...head, signature: head.signature.slice(1) },
        { ...head, signature: `${head.signature.slice(0, 85)}=` },
        { ...head, keyId: undefined },
      ]) {
        expect(() => parseSignedTreeHead(bad)).toThrow(InvalidFormatError);
        expect(keys.verify(bad).ok).toBe(false);
      }
    });

    it('drops unknown fields (they are not signed)', () => {
      expect(parseSignedTreeHead({ ...head, extra: 'x' })).toEqual(head);
    });

    it('refuses an unknown key id and says which', () => {
      const other = new FakeSigner('other');
      expect(new HeadKeys({ keys: [other.publicJwk] }).verify(head)).toEqual({
        ok: false,
        reason: `unknown signing key ${head.keyId}`,
      });
    });

    it('refuses to sign fields out of range', () => {
      const signer = new FakeSigner();
      const { signature: _s, keyId: _k, alg: _a, ...fields } = head;
      expect(() => signTreeHead({ ...fields, treeSize: -1 }, signer)).toThrow(InvalidInputError);
      expect(() => signTreeHead({ ...fields, rootHash: 'ab' }, signer)).toThrow(InvalidInputError);
      expect(signer.signed).toHaveLength(0);
    });
  });

  describe('JWK sets', () => {
    it('publish kty OKP, crv Ed25519, kid, alg EdDSA, use sig', () => {
      const ring = new KeyRing(new FakeSigner('a'));
      const [key] = ring.jwks().keys;
      expect(Object.keys(key ?? {}).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
      expect(key).toMatchObject({
        kty: 'OKP',
        crv: 'Ed25519',
        alg: 'EdDSA',
        use: 'sig',
        kid: 'fake-a',
      });
    });

    it('skip keys of other types and refuse malformed Ed25519 keys or duplicate kids', () => {
      const [jwk] = JWKS.keys as [Record<string, unknown>];
      expect(parseJwks({ keys: [{ kty: 'RSA', n: 'x', e: 'AQAB' }, jwk] }).keys).toHaveLength(1);
      expect(() => parseJwks({ keys: [jwk, jwk] })).toThrow(InvalidFormatError);
      expect(() => parseJwks({ keys: [{ ...jwk, x: 'short' }] })).toThrow(InvalidFormatError);
      expect(() => parseJwks({ keys: [{ ...jwk, crv: 'X25519' }] })).toThrow(InvalidFormatError);
      expect(() => parseJwks({ keys: [{ ...jwk, use: 'enc' }] })).toThrow(InvalidFormatError);
      expect(() => parseJwks({ keys: [{ ...jwk, kid: undefined }] })).toThrow(InvalidFormatError);
      expect(() => parseJwks([])).toThrow(InvalidFormatError);
    });

    it('compute RFC 7638 thumbprints', () => {
      // The thumbprint input spelled out: members crv, kty, x in order, no whitespace.
      const x = Buffer.from(PUBLIC, 'hex').toString('base64url');
      const want = createHash('sha256')
        .update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`)
        .digest('base64url');
      expect(jwkThumbprint(x)).toBe(want);
    });
  });

  describe('signers', () => {
    it('load the same key from PEM, private JWK and seed', () => {
      const a = testKey();
      const pem = Ed25519Signer.fromPem(a.exportPkcs8Pem());
      const d = Buffer.from(SEED, 'hex').toString('base64url');
      const jwk = Ed25519Signer.fromJwk({
        kty: 'OKP',
        crv: 'Ed25519',
        x: a.publicJwk.x,
        d,
        kid: 'k1',
      });
      expect(pem.publicJwk).toEqual(a.publicJwk);
      expect(jwk.keyId).toBe('k1');
      expect(jwk.publicJwk.x).toBe(a.publicJwk.x);
      const data = Uint8Array.of(1, 2, 3);
      expect(jwk.sign(data)).toEqual(a.sign(data));
    });

    it('refuse keys that are not Ed25519 private keys, without quoting them', () => {
      const pub = createPublicKey({ key: vectors.testKey.publicJwk as never, format: 'jwk' });
      const pubPem = pub.export({ format: 'pem', type: 'spki' }) as string;
      expect(() => Ed25519Signer.fromPem(pubPem)).toThrow(InvalidInputError);
      const err = (() => {
        try {
          Ed25519Signer.fromPem('-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----');
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(InvalidInputError);
      expect(err?.message).not.toContain('c2VjcmV0');
      expect(() => Ed25519Signer.fromSeed(new Uint8Array(31))).toThrow(InvalidInputError);
    });

    it('fake signers are deterministic per label, record what they sign, and fail on demand', () => {
      const { head } = vectors.heads[0] as { head: SignedTreeHead };
      const { signature: _s, keyId: _k, alg: _a, ...fields } = head;
      const a = new FakeSigner('a');
      expect(signTreeHead(fields, a)).toEqual(signTreeHead(fields, new FakeSigner('a')));
      expect(new FakeSigner('b').keyId).not.toBe(a.keyId);
      expect(a.signed).toHaveLength(1);
      a.failWith = new Error('signer down');
      expect(() => signTreeHead(fields, a)).toThrow('signer down');
      expect(signTreeHead(fields, a).keyId).toBe('fake-a');
    });
  });

  describe('key rotation', () => {
    it('signs with the new key from its start; heads of retired keys still verify', () => {
      const { head } = vectors.heads[0] as { head: SignedTreeHead };
      const { signature: _s, keyId: _k, alg: _a, ...fields } = head;
      const first = new FakeSigner('k1');
      let ring = new KeyRing(first);
      const old = signTreeHead(fields, ring.current);
      ring = ring.rotate(new FakeSigner('k2'));
      const next = signTreeHead(
        { ...fields, treeSize: 6, rootHash: merkle.roots[6] as string },
        ring.current,
      );
      expect(next.keyId).toBe('fake-k2');
      expect(ring.jwks().keys.map((k) => k.kid)).toEqual(['fake-k2', 'fake-k1']);
      ring = ring.rotate(new FakeSigner('k3'));
      const verifier = ring.verifier();
      expect(verifier.verify(old)).toMatchObject({ ok: true, key: { kid: 'fake-k1' } });
      expect(verifier.verify(next)).toMatchObject({ ok: true, key: { kid: 'fake-k2' } });
      // A head claiming a retired key id but signed by another key does not verify.
      const forged = { ...signTreeHead(fields, new FakeSigner('k3')), keyId: 'fake-k1' };
      expect(verifier.verify(forged).ok).toBe(false);
      expect(() => ring.rotate(ring.current)).toThrow(InvalidInputError);
    });

    it('ignores a retired key that is also current (a rotation that stopped half-way)', () => {
      const k = new FakeSigner('k1');
      const ring = new KeyRing(k, [k.publicJwk, new FakeSigner('k0').publicJwk, k.publicJwk]);
      expect(ring.jwks().keys.map((j) => j.kid)).toEqual(['fake-k1', 'fake-k0']);
    });
  });
});
