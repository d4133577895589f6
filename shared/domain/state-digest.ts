import { EMPTY_STATE_DIGEST, type JsonObject, stateDigestOf } from './state.js';
import { digestV2, EMPTY_STATE_DIGEST_V2 } from './state-v2/merkle-state.js';

/**
 * Which state digest a stream uses (the head's `digestVersion`, docs/records-v2.md): v1 is
 * SHA-256 of the RFC 8785 JSON of the whole state, v2 the Merkle digest of docs/state-v2.md.
 * A head without the field is v1 forever; every stream created from now on is v2, and so is
 * every fork (whatever its source).
 */

export type DigestVersion = 1 | 2;

/** The digest version of streams created now (new streams and forks). */
export const NEW_STREAM_DIGEST_VERSION = 2 as const;

/** The version a head (or anything carrying the field) says; absent means 1. */
export const digestVersionOf = (head: { digestVersion?: unknown } | undefined): DigestVersion =>
  head?.digestVersion === 2 ? 2 : 1;

/** The state digest of `state` under `version`, from scratch. */
export const digestOfState = (state: JsonObject, version: DigestVersion): string =>
  version === 2 ? digestV2(state) : stateDigestOf(state);

/** The digest of `{}` (the state of a stream before any checkpoint) under `version`. */
export const emptyStateDigest = (version: DigestVersion): string =>
  version === 2 ? EMPTY_STATE_DIGEST_V2 : EMPTY_STATE_DIGEST;
