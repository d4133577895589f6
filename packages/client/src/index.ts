/**
 * `@hefesto/client`: the Hefesto SDK (every route, retries, idempotency keys, client-side
 * chain verification, signed tree heads checked against a persistent trust store) and the durable harness (`resume`: observations recorded and replayed,
 * exactly-once effects, checkpoints, leases).
 *
 * This file is the package's only entry: the sources stay in `shared/client` and
 * `shared/domain` (the pure hashing, canonical encoding, verification and state code they
 * use); `scripts/pack.ts` bundles them from here into one module and one declaration
 * file per format, so the package shows none of the repository's paths. `export *` so
 * that what `shared/client` adds is published without a second list to keep in step.
 *
 * @example
 * ```ts
 * import { HefestoClient, resume } from '@hefesto/client';
 *
 * const client = new HefestoClient({ baseUrl: 'http://localhost:8787', apiKey, verify: true });
 * const run = await resume(client, 'ticket-4711');
 * await run.checkpoint([{ op: 'set', path: '/status', value: 'open' }]);
 * ```
 */

export * from '../../../shared/client/checkpoint-types.js';
export * from '../../../shared/client/client.js';
export * from '../../../shared/client/client-proofs.js';
export * from '../../../shared/client/effect-run.js';
export * from '../../../shared/client/errors.js';
export * from '../../../shared/client/harness.js';
export * from '../../../shared/client/history-types.js';
export type { RetryPolicy } from '../../../shared/client/http.js';
export * from '../../../shared/client/large-values.js';
export * from '../../../shared/client/options.js';
export * from '../../../shared/client/proofs.js';
export type { StateSchema, Upcaster } from '../../../shared/client/schema-migration.js';
export * from '../../../shared/client/set-value.js';
export * from '../../../shared/client/state-proofs.js';
export * from '../../../shared/client/trust-store.js';
export * from '../../../shared/client/trust-store-file.js';
export * from '../../../shared/client/tuples.js';
export * from '../../../shared/client/types.js';
export * from '../../../shared/domain/copy-thread.js';
// The digest that binds a checkpoint's pending writes to the chain (docs/ledger-format.md).
export {
  compareWrites,
  type DigestedWrite,
  pendingWritesDigest,
} from '../../../shared/domain/pending-writes.js';
export {
  HeadKeys,
  type JwkSet,
  type SignedTreeHead,
  verifySignedTreeHead,
} from '../../../shared/domain/signed-head.js';
// The state digests (v1 and v2), from the domain code the server runs.
export {
  type DigestVersion,
  digestOfState,
  emptyStateDigest,
} from '../../../shared/domain/state-digest.js';
// Chain verification of public events, format 1 and 2 (a format 2 payload bound by the
// stream's commitment key, docs/privacy.md).
export {
  type ChainPoint,
  type VerifyEventsOptions,
  verifyEvents,
} from '../../../shared/domain/verify.js';
