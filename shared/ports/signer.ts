import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
} from 'node:crypto';
import { InvalidInputError } from '../domain/errors.js';
import { sha256 } from '../domain/hashing.js';
import type { HeadSigner } from '../domain/signed-head.js';
import {
  type Ed25519PublicJwk,
  HEAD_ALG,
  HeadKeys,
  type JwkSet,
  jwkThumbprint,
} from '../domain/signed-head.js';

/**
 * Signer port: signs tree heads in process (Ed25519 signs in ~43 µs here; a KMS Sign call per
 * append would cost a request, ~300/s per account and Region, and a bill). The wiring loads
 * the private key once per process: a key file in embedded mode
 * (shared/adapters/local/signing-key-file.ts), a secret in AWS.
 */
export interface Signer extends HeadSigner {
  /** The public half, as `GET /v1/signing-keys` publishes it. */
  readonly publicJwk: Ed25519PublicJwk;
}

/** PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

const publicJwkOf = (key: KeyObject, kid?: string): Ed25519PublicJwk => {
  const { x } = createPublicKey(key).export({ format: 'jwk' }) as { x: string };
  return { kty: 'OKP', crv: 'Ed25519', x, kid: kid ?? jwkThumbprint(x), alg: HEAD_ALG, use: 'sig' };
};

/**
 * The in-process Ed25519 signer. Its key id is the key's RFC 7638 thumbprint unless given.
 *
 * @example
 * ```ts
 * const signer = Ed25519Signer.fromPem(readFileSync(path, 'utf8'));
 * const receipt = signTreeHead(fields, signer);
 * ```
 */
export class Ed25519Signer implements Signer {
  readonly alg = HEAD_ALG;
  readonly keyId: string;
  readonly publicJwk: Ed25519PublicJwk;
  readonly #key: KeyObject;

  private constructor(key: KeyObject, kid?: string) {
    if (key.type !== 'private' || key.asymmetricKeyType !== 'ed25519') {
      throw new InvalidInputError('the signing key must be an Ed25519 private key');
    }
    this.#key = key;
    this.publicJwk = publicJwkOf(key, kid);
    this.keyId = this.publicJwk.kid;
  }

  /** From a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, as `openssl genpkey -algorithm ed25519` writes). */
  static fromPem(pem: string, kid?: string): Ed25519Signer {
    return new Ed25519Signer(
      Ed25519Signer.#load(() => createPrivateKey(pem)),
      kid,
    );
  }

  /** From a private JWK (`{kty: OKP, crv: Ed25519, x, d}`); its `kid` is kept when present. */
  static fromJwk(jwk: {
    kty: string;
    crv: string;
    x: string;
    d: string;
    kid?: string;
  }): Ed25519Signer {
    const { kty, crv, x, d } = jwk;
    const key = Ed25519Signer.#load(() =>
      createPrivateKey({ key: { kty, crv, x, d }, format: 'jwk' }),
    );
    return new Ed25519Signer(key, jwk.kid);
  }

  /** From the 32-byte RFC 8032 seed (private key). */
  static fromSeed(seed: Uint8Array, kid?: string): Ed25519Signer {
    if (seed.length !== 32) throw new InvalidInputError('an Ed25519 seed has 32 bytes');
    const der = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
    return new Ed25519Signer(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }), kid);
  }

  /** A new random key (OS randomness). */
  static generate(): Ed25519Signer {
    return new Ed25519Signer(generateKeyPairSync('ed25519').privateKey);
  }

  static #load(load: () => KeyObject): KeyObject {
    try {
      return load();
    } catch (err) {
      // The message of a key parser may quote key material: keep only that it failed.
      throw new InvalidInputError('the signing key cannot be read', { cause: (err as Error).name });
    }
  }

  sign(data: Uint8Array): Uint8Array {
    return new Uint8Array(sign(null, data, this.#key));
  }

  /** The private key as PKCS#8 PEM, for the key file that holds it. Never log it. */
  exportPkcs8Pem(): string {
    return this.#key.export({ format: 'pem', type: 'pkcs8' }) as string;
  }
}

/**
 * A deterministic signer for tests: a real Ed25519 key derived from `label` (so what it signs
 * verifies, and signatures are the same on every run), that records what it signed and can
 * be told to fail.
 *
 * @example
 * ```ts
 * const signer = new FakeSigner('tenant-a');
 * signer.failWith = new Error('HSM down'); // the next sign() throws
 * ```
 */
export class FakeSigner implements Signer {
  readonly alg = HEAD_ALG;
  readonly keyId: string;
  readonly publicJwk: Ed25519PublicJwk;
  /** Preimages signed, in order. */
  readonly signed: Uint8Array[] = [];
  /** When set, sign() throws it (once) instead of signing. */
  failWith: Error | undefined;
  readonly #inner: Ed25519Signer;

  constructor(label = 'test') {
    this.#inner = Ed25519Signer.fromSeed(sha256(`hefesto/fake-signer/${label}`), `fake-${label}`);
    this.keyId = this.#inner.keyId;
    this.publicJwk = this.#inner.publicJwk;
  }

  sign(data: Uint8Array): Uint8Array {
    const failure = this.failWith;
    if (failure !== undefined) {
      this.failWith = undefined;
      throw failure;
    }
    this.signed.push(data.slice());
    return this.#inner.sign(data);
  }
}

/**
 * The keys of a deployment: the current signer, which signs every new head, and the public
 * keys of retired signers, still published so that heads they signed keep verifying.
 *
 * @example
 * ```ts
 * let ring = new KeyRing(oldSigner);
 * ring = ring.rotate(Ed25519Signer.generate()); // new heads use the new key
 * ring.jwks(); // { keys: [new, old] }
 * ```
 */
export class KeyRing {
  readonly retired: readonly Ed25519PublicJwk[];

  constructor(
    readonly current: Signer,
    retired: readonly Ed25519PublicJwk[] = [],
  ) {
    // A key listed as retired and current (a rotation that crashed half-way) is current.
    const seen = new Set([current.keyId]);
    const kept: Ed25519PublicJwk[] = [];
    for (const key of retired) {
      if (seen.has(key.kid)) continue;
      seen.add(key.kid);
      kept.push(key);
    }
    this.retired = kept;
  }

  /** A ring whose current signer is `next`; the current one joins the retired keys. */
  rotate(next: Signer): KeyRing {
    if (next.keyId === this.current.keyId) throw new InvalidInputError('rotate to a new key');
    return new KeyRing(next, [this.current.publicJwk, ...this.retired]);
  }

  /** Every public key, current first: the body of `GET /v1/signing-keys`. */
  jwks(): JwkSet {
    return { keys: [this.current.publicJwk, ...this.retired] };
  }

  /** A verifier for heads signed by any key of the ring. */
  verifier(): HeadKeys {
    return new HeadKeys(this.jwks());
  }
}
