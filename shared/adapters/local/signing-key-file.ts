import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { InvalidFormatError, InvalidInputError } from '../../domain/errors.js';
import { type Ed25519PublicJwk, parseJwks } from '../../domain/signed-head.js';
import { Ed25519Signer, KeyRing } from '../../ports/signer.js';
import { fsyncDir, mkdirDurable } from './durable-fs.js';

/**
 * Embedded mode's signing keys, in the data directory:
 *
 *   signing-key.pem             the current private key, PKCS#8 PEM, mode 0600
 *   signing-keys-retired.json   public JWKs of retired keys ({"keys": [...]}), newest first
 *
 * The first start creates the key; later starts load it. Two processes starting at once
 * both write a temp file and `link` it to the final name: link fails if the name exists, so
 * exactly one key wins and both load it.
 */

export const SIGNING_KEY_FILE = 'signing-key.pem';
export const RETIRED_KEYS_FILE = 'signing-keys-retired.json';

const tempName = (path: string) => `${path}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;

/** Writes `body` to a new temp file (mode 0600) and makes its bytes durable; returns its path. */
const writeTemp = (path: string, body: string): string => {
  const temp = tempName(path);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    fchmodSync(fd, 0o600); // whatever the umask
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return temp;
};

const isCode = (err: unknown, code: string) => (err as NodeJS.ErrnoException).code === code;

const readKey = (path: string): Ed25519Signer => {
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    // As ssh does: a key others can read may have been copied, so refuse it.
    throw new InvalidInputError(
      `signing key file ${path} has mode ${mode.toString(8)}: run chmod 600 on it`,
    );
  }
  return Ed25519Signer.fromPem(readFileSync(path, 'utf8'));
};

/**
 * The current signing key of `dir`, created (mode 0600) if the directory has none.
 *
 * @example
 * ```ts
 * const { signer, created } = loadOrCreateSigningKey(settings.dataDir);
 * ```
 */
export const loadOrCreateSigningKey = (
  dir: string,
): { signer: Ed25519Signer; created: boolean } => {
  const path = join(dir, SIGNING_KEY_FILE);
  try {
    return { signer: readKey(path), created: false };
  } catch (err) {
    if (!isCode(err, 'ENOENT')) throw err;
  }
  mkdirDurable(dir);
  const temp = writeTemp(path, Ed25519Signer.generate().exportPkcs8Pem());
  let created = true;
  try {
    linkSync(temp, path); // atomic create-if-absent
  } catch (err) {
    if (!isCode(err, 'EEXIST')) throw err;
    created = false; // another process created it first: use theirs
  } finally {
    unlinkSync(temp);
  }
  fsyncDir(dir);
  return { signer: readKey(path), created };
};

const readRetired = (dir: string): Ed25519PublicJwk[] => {
  const path = join(dir, RETIRED_KEYS_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return [];
    throw err;
  }
  try {
    return parseJwks(JSON.parse(text)).keys;
  } catch (err) {
    // Fail closed: dropping retired keys would make the heads they signed unverifiable.
    throw new InvalidFormatError(`${path} is not a JWK set of Ed25519 keys`, { cause: err });
  }
};

/** The key ring of `dir`: its current key (created at first start) and its retired keys. */
export const loadKeyRing = (dir: string): KeyRing =>
  new KeyRing(loadOrCreateSigningKey(dir).signer, readRetired(dir));

/**
 * Rotates the key of `dir`: a new key signs from now on; the old public key stays published.
 * Not safe to run beside a server that is starting (run it with the server stopped, then
 * start it). Steps, and what a crash after each leaves:
 *   1. the old public key is added to the retired file (temp + rename): crash -> the old key
 *      is still current and also listed as retired, which the ring ignores;
 *   2. the new key is written to a temp file (0600): crash -> a stray temp file, old key current;
 *   3. rename over signing-key.pem, fsync the directory: the new key is current.
 */
export const rotateSigningKeyFile = (dir: string): KeyRing => {
  const ring = loadKeyRing(dir);
  const next = Ed25519Signer.generate();
  const retiredPath = join(dir, RETIRED_KEYS_FILE);
  const retired = [ring.current.publicJwk, ...ring.retired];
  const body = `${JSON.stringify({ keys: retired }, null, 2)}\n`;
  renameSync(writeTemp(retiredPath, body), retiredPath);
  fsyncDir(dir);
  const keyPath = join(dir, SIGNING_KEY_FILE);
  renameSync(writeTemp(keyPath, next.exportPkcs8Pem()), keyPath);
  fsyncDir(dir);
  return new KeyRing(readKey(keyPath), retired);
};

/**
 * Keeps `lost` public keys published as retired (a key whose private half is gone: its heads
 * must keep verifying), after the ones retired already. Same write as step 1 of a rotation.
 */
export const retireLostKeys = (dir: string, lost: readonly Ed25519PublicJwk[]): KeyRing => {
  const ring = loadKeyRing(dir);
  const retiredPath = join(dir, RETIRED_KEYS_FILE);
  const retired = [...ring.retired, ...lost.filter((k) => k.kid !== ring.current.keyId)];
  const body = `${JSON.stringify({ keys: retired }, null, 2)}\n`;
  renameSync(writeTemp(retiredPath, body), retiredPath);
  fsyncDir(dir);
  return new KeyRing(ring.current, retired);
};
