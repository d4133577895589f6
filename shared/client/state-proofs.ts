import type { JsonObject } from '../domain/state.js';
import { digestOfState } from '../domain/state-digest.js';
import { type StateProof, verifyProof } from '../domain/state-v2/proof.js';
import { ClientVerificationError } from './errors.js';
import type { Json, LedgerEvent, StateValue } from './types.js';

/**
 * Client-side checks of state reads (docs/state-v2.md), from the same domain code the server
 * runs. Pure: the caller fetches, these decide; a failure is a `ClientVerificationError`.
 */

/**
 * Whether `state` hashes to `digest` under the stream's digest version (absent: 1).
 *
 * @example
 * ```ts
 * const { state, stateDigest, digestVersion } = await client.getState('run-1');
 * if (!stateMatches(state, stateDigest, digestVersion)) throw new Error('tampered');
 * ```
 */
export const stateMatches = (
  state: { [key: string]: Json },
  digest: string,
  version: 1 | 2 | undefined,
): boolean => digestOfState(state as JsonObject, version === 2 ? 2 : 1) === digest;

/**
 * Checks a state proof (docs/state-v2.md) against a state digest the caller trusts; never
 * throws for a bad proof.
 *
 * @example
 * ```ts
 * const check = verifyStateProof(answer.proof, trustedDigest);
 * if (check.ok) console.log(check.value);
 * ```
 */
export const verifyStateProof = (
  proof: NonNullable<StateValue['proof']>,
  digest: string,
): { ok: true; value: Json } | { ok: false; reason: string } => {
  const check = verifyProof(proof as StateProof, digest);
  return check.ok ? { ok: true, value: check.value as Json } : check;
};

/**
 * The value a proof answer proves, checked against `checkpoint`: a verified event of the
 * chain (a delta or a fork) whose recorded state digest is the one the proof must lead to.
 * Refuses a proof for another digest or path, a tampered value and a tampered node.
 *
 * @example
 * ```ts
 * const value = provenValue(answer, verifiedCheckpointEvent, '/messages/3');
 * ```
 */
export const provenValue = (answer: StateValue, checkpoint: LedgerEvent, path: string): Json => {
  const seq = checkpoint.seq;
  const recorded = (checkpoint.payload as { stateDigest?: unknown } | null)?.stateDigest;
  if (typeof recorded !== 'string') {
    throw new ClientVerificationError(seq, `event ${seq} is not a checkpoint: it records no state`);
  }
  const proof = answer.proof;
  if (!proof) throw new ClientVerificationError(seq, 'the server sent no proof');
  if (proof.digest !== recorded || proof.path !== path) {
    throw new ClientVerificationError(seq, 'the proof is for another state or path');
  }
  const check = verifyStateProof(proof, recorded);
  if (!check.ok) throw new ClientVerificationError(seq, `the proof does not hold: ${check.reason}`);
  return check.value;
};
