import { eventLeafHash, hexToHash } from '../domain/merkle/hash.js';
import {
  leafIndexOf,
  parseConsistencyProof,
  parseInclusionProof,
} from '../domain/merkle/proof-json.js';
import { verifyConsistency, verifyInclusion } from '../domain/merkle/verify.js';
import { type HeadKeys, parseSignedTreeHead, type SignedTreeHead } from '../domain/signed-head.js';
import { ClientVerificationError } from './errors.js';

/**
 * Client-side checks of what the server signs and proves (docs/proofs.md). Pure: nothing
 * here talks to the server; the caller fetches, these functions decide. Every failure is a
 * `ClientVerificationError` (code `ErrTamperedLedger`).
 */

/**
 * The server's signed heads contradict a head this client verified before: the stream was
 * rewritten or truncated below it. `reason` is `rewritten` ("history rewritten since tree size
 * N") or `truncated` ("truncated below a signed head").
 *
 * @example
 * ```ts
 * try {
 *   checkConsistency(trusted, current, proof);
 * } catch (err) {
 *   if (err instanceof TamperedHistoryError) alert(`${err.reason} at tree size ${err.trustedSize}`);
 * }
 * ```
 */
export class TamperedHistoryError extends ClientVerificationError {
  readonly reason: 'rewritten' | 'truncated';
  readonly trustedSize: number;
  readonly currentSize: number;

  constructor(reason: 'rewritten' | 'truncated', trusted: SignedTreeHead, current: SignedTreeHead) {
    const truncated = reason === 'truncated';
    super(
      // Truncated: the first seq the server no longer has. Rewritten: no proof says where the
      // histories part, so nothing after the tree's first leaf can be trusted.
      truncated ? trusted.treeBase + current.treeSize + 1 : trusted.treeBase + 1,
      truncated
        ? `truncated below a signed head (signed tree size ${trusted.treeSize}, now ${current.treeSize})`
        : `history rewritten since tree size ${trusted.treeSize}`,
    );
    this.name = 'TamperedHistoryError';
    this.reason = reason;
    this.trustedSize = trusted.treeSize;
    this.currentSize = current.treeSize;
  }
}

/**
 * Which stream a head must be for.
 *
 * @example
 * ```ts
 * const scope: HeadScope = { tenant: 'acme', streamId: 'run-1' };
 * ```
 */
export interface HeadScope {
  tenant: string;
  streamId: string;
}

const refused = (seq: number, message: string) => new ClientVerificationError(seq, message);

/**
 * Verifies a receipt or tree head (raw JSON from the server) against the published keys and
 * the stream it must be for; returns it parsed.
 *
 * @example
 * ```ts
 * const keys = new HeadKeys(await fetchJson('/v1/signing-keys'));
 * const head = verifyReceipt(response.treeHead, keys, { tenant: 'acme', streamId: 'run-1' });
 * ```
 */
export const verifyReceipt = (value: unknown, keys: HeadKeys, scope: HeadScope): SignedTreeHead => {
  const verdict = keys.verify(value);
  if (!verdict.ok) throw refused(0, `tree head refused: ${verdict.reason}`);
  const head = parseSignedTreeHead(value);
  if (head.tenant !== scope.tenant || head.streamId !== scope.streamId) {
    throw refused(
      0,
      `tree head is for ${head.tenant}/${head.streamId}, not ${scope.tenant}/${scope.streamId}`,
    );
  }
  return head;
};

/**
 * Verifies that event (seq, chain hash) is in the tree of a verified head, with the server's
 * inclusion proof `{leafIndex, treeSize, path}`.
 *
 * @example
 * ```ts
 * verifyEventInclusion(head, { seq: 7, hash: event.hash }, await fetchJson(`.../proofs/inclusion?seq=7&treeSize=${head.treeSize}`));
 * ```
 */
export const verifyEventInclusion = (
  head: SignedTreeHead,
  event: { seq: number; hash: string },
  proof: unknown,
): void => {
  let parsed: ReturnType<typeof parseInclusionProof>;
  let leafIndex: number;
  let leaf: Uint8Array;
  try {
    parsed = parseInclusionProof(proof);
    leafIndex = leafIndexOf(event.seq, head.treeBase);
    leaf = eventLeafHash(event.hash);
  } catch (err) {
    throw refused(event.seq, `inclusion proof refused: ${(err as Error).message}`);
  }
  if (parsed.leafIndex !== leafIndex || parsed.treeSize !== head.treeSize) {
    throw refused(
      event.seq,
      `inclusion proof is for leaf ${parsed.leafIndex} of ${parsed.treeSize}, not ${leafIndex} of ${head.treeSize}`,
    );
  }
  if (!verifyInclusion(leaf, leafIndex, head.treeSize, parsed.path, hexToHash(head.rootHash))) {
    throw refused(event.seq, `event is not in the signed tree of size ${head.treeSize}`);
  }
};

/**
 * Checks that `current` (a verified head) extends `trusted` (the last head this client
 * verified for the stream), with the server's consistency proof `{from, to, path}` from
 * trusted.treeSize to current.treeSize (not needed when current is not larger). Throws
 * `TamperedHistoryError` when the histories contradict each other.
 *
 * @example
 * ```ts
 * const proof = current.treeSize > trusted.treeSize
 *   ? await fetchJson(`.../proofs/consistency?from=${trusted.treeSize}&to=${current.treeSize}`)
 *   : undefined;
 * checkConsistency(trusted, current, proof);
 * await trustStore.put(key, current);
 * ```
 */
export const checkConsistency = (
  trusted: SignedTreeHead,
  current: SignedTreeHead,
  proof?: unknown,
): void => {
  if (trusted.tenant !== current.tenant || trusted.streamId !== current.streamId) {
    throw refused(0, 'tree heads of two different streams cannot be compared');
  }
  // (From size 0, verifyConsistency also demands that the trusted root be the empty tree's.)
  // A tree that starts at another seq is another tree: the one we trusted was replaced.
  if (current.treeBase !== trusted.treeBase)
    throw new TamperedHistoryError('rewritten', trusted, current);
  if (current.treeSize < trusted.treeSize)
    throw new TamperedHistoryError('truncated', trusted, current);
  const oldRoot = hexToHash(trusted.rootHash);
  const newRoot = hexToHash(current.rootHash);
  if (current.treeSize === trusted.treeSize) {
    if (trusted.rootHash !== current.rootHash)
      throw new TamperedHistoryError('rewritten', trusted, current);
    return;
  }
  let parsed: ReturnType<typeof parseConsistencyProof>;
  try {
    parsed = parseConsistencyProof(proof);
  } catch (err) {
    throw refused(trusted.treeBase + 1, `consistency proof refused: ${(err as Error).message}`);
  }
  if (parsed.from !== trusted.treeSize || parsed.to !== current.treeSize) {
    throw refused(
      trusted.treeBase + 1,
      `consistency proof is for ${parsed.from} -> ${parsed.to}, not ${trusted.treeSize} -> ${current.treeSize}`,
    );
  }
  if (!verifyConsistency(trusted.treeSize, current.treeSize, parsed.path, oldRoot, newRoot)) {
    throw new TamperedHistoryError('rewritten', trusted, current);
  }
};
