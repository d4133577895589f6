import { SIGNING_KEYS_KEY } from '../chain/storage-keys.js';
import { InvalidFormatError, UnavailableError } from '../domain/errors.js';
import { optimistic } from '../domain/optimistic.js';
import { type Ed25519PublicJwk, parseJwks } from '../domain/signed-head.js';
import type { RecordStore } from '../ports/record-store.js';
import type { KeyRing } from '../ports/signer.js';

/**
 * A lost or replaced signing key is loud. The record store keeps the public JWK of every key
 * that has been this deployment's current signing key (record `signing-keys`, storage-keys.ts):
 *
 *   {pk: "signing-keys", sk: "signing-keys", keys: "<JSON JWK set, newest first>", current: kid}
 *
 * Before a server signs anything (embedded start, Lambda cold start) it checks its key ring
 * against that record:
 *   1. no record (a new deployment, or one from before this record): the ring's keys are
 *      recorded (create-only; a racing start re-reads and checks);
 *   2. every recorded key must be in the ring, current or retired: else heads signed by a key
 *      exist and the key is missing (a deleted signing-key.pem, a changed secret without
 *      rotation) and the start is refused with SigningKeyMissingError, since every receipt
 *      and witnessed head it signed would stop verifying;
 *   3. a current key not yet recorded (a rotation, which retired the old key) is added,
 *      conditional on the record being the one read.
 *
 * The record only guards against accidents and key swaps by whoever holds the key, not the
 * table: who can write the table can rewrite it (the witness and the clients' trust stores
 * are the detectors for that, docs/proofs.md).
 */

/**
 * Heads were signed by keys the server's ring no longer holds.
 *
 * @example
 * ```ts
 * await checkSigningKeys(records, ring).catch((err) => {
 *   if (err instanceof SigningKeyMissingError) console.error(err.missing);
 * });
 * ```
 */
export class SigningKeyMissingError extends UnavailableError {
  readonly missing: string[];

  constructor(missing: string[], hint: string) {
    super(
      `heads signed by key ${missing.join(', ')} exist, but the server's signing keys ` +
        `(current and retired) do not include ${missing.length === 1 ? 'it' : 'them'}: the ` +
        `signing key was lost or replaced without a rotation. ${hint}`,
    );
    this.missing = missing;
  }
}

/** How to recover, in the words of the deployment (key file or secret). */
export const KEY_FILE_HINT =
  'Restore signing-key.pem (mode 0600) from a backup of the data directory; if the key is ' +
  "lost for good, run 'hefesto keys rotate-signing --lost' with the server stopped: it starts " +
  'a new key and keeps the lost public key published (from this record), so old receipts ' +
  'keep verifying.';

/** The public keys recorded as having signed heads, newest first. */
export const recordedSigningKeys = async (records: RecordStore): Promise<Ed25519PublicJwk[]> => {
  const item = await records.get(SIGNING_KEYS_KEY);
  return item === undefined ? [] : parseRecord(item.keys);
};

const parseRecord = (keys: unknown): Ed25519PublicJwk[] => {
  try {
    return parseJwks(JSON.parse(String(keys))).keys;
  } catch (err) {
    throw new InvalidFormatError('the signing-keys record is not a JWK set', { cause: err });
  }
};

/** Steps 1-3 above; resolves when the ring may sign. */
export const checkSigningKeys = async (
  records: RecordStore,
  ring: KeyRing,
  hint: string = KEY_FILE_HINT,
): Promise<void> => {
  const inRing = new Set(ring.jwks().keys.map((k) => k.kid));
  await optimistic(
    async () => {
      const item = await records.get(SIGNING_KEYS_KEY);
      if (item === undefined) {
        await records.put(
          { ...SIGNING_KEYS_KEY, keys: JSON.stringify(ring.jwks()), current: ring.current.keyId },
          { conditions: [{ op: 'notExists' }] },
        );
        return;
      }
      const recorded = parseRecord(item.keys);
      const missing = recorded.filter((k) => !inRing.has(k.kid)).map((k) => k.kid);
      if (missing.length > 0) throw new SigningKeyMissingError(missing, hint);
      if (recorded.some((k) => k.kid === ring.current.keyId)) return;
      await records.put(
        {
          ...SIGNING_KEYS_KEY,
          keys: JSON.stringify({ keys: [ring.current.publicJwk, ...recorded] }),
          current: ring.current.keyId,
        },
        { conditions: [{ op: 'eq', attr: 'keys', value: String(item.keys) }] },
      );
    },
    {
      attempts: 5,
      exhausted: () => {
        throw new UnavailableError('the signing-keys record keeps changing: try again');
      },
    },
  );
};
