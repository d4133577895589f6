import type { JsonValue } from '../domain/canonical.js';
import { InvalidInputError, NotFoundError } from '../domain/errors.js';
import type { DigestVersion } from '../domain/state-digest.js';
import { proveState, type StateProof } from '../domain/state-v2/index.js';
import { splitPointer, valueAt } from '../domain/state-v2/pointer.js';
import type { StateStore } from './state.js';

/**
 * Reads of one value of a stream's state by RFC 6901 pointer (`GET .../state?path=`), and
 * with `proof` its Merkle path (docs/state-v2.md, "Reads by path and proofs"), so a client
 * checks the value against the state digest the hash chain records, without the rest of the
 * state. An array is entered only at a canonical index below its length, an object only at
 * an own member; a path the state does not hold is ErrNotFound (404). Proofs exist only for
 * state digest v2: a v1 stream's digest covers the whole state (400).
 *
 * The state is hydrated (and verified) as for a whole read; reading only the chunks on the
 * path is the chunk store's job (snapshots v2), which this answer does not depend on.
 */

export interface StateValue {
  seq: number;
  stateDigest: string;
  digestVersion: DigestVersion;
  path: string;
  value: JsonValue;
  proof?: StateProof;
}

export const readStateValue = async (
  states: StateStore,
  req: { tenant: string; stream: string; at?: number; path: string; proof?: boolean },
): Promise<StateValue> => {
  const segments = splitPointer(req.path);
  if (segments === undefined || segments.length === 0) {
    throw new InvalidInputError('path must be a JSON Pointer below the root, like /messages/3');
  }
  const hydrated = await states.hydrate(req.tenant, req.stream, req.at);
  const { working } = hydrated;
  const answer = {
    seq: hydrated.seq,
    stateDigest: hydrated.stateDigest,
    digestVersion: working.version,
    path: req.path,
  };
  if (req.proof) {
    const tree = working.tree;
    if (!tree) {
      throw new InvalidInputError(
        `stream ${req.stream} uses state digest v1, which covers the whole state: no proof by path`,
      );
    }
    const proof = proveState(tree, req.path);
    return { ...answer, value: proof.value, proof };
  }
  const value = valueAt(working.state, segments);
  if (value === undefined) throw new NotFoundError(`the state holds no value at ${req.path}`);
  return { ...answer, value };
};
